"""Sub-commands: ``download``, ``europarl-intersect``."""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

from nmtvariants.corpora.catalogue import list_corpora
from nmtvariants.corpora.download import download_corpus
from nmtvariants.corpora.europarl import intersect_files
from nmtvariants.errors import ConfigError


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    download = subparsers.add_parser(
        "download",
        help="download + extract a catalogued corpus into DIR as {split}.{lang} files",
        description="Mirror first (a folder or URL prefix laid out like shared/data), then upstream; "
        "sha256/md5 verified; DIR/manifest.json lists the outputs with their sha256.",
    )
    download.add_argument(
        "names",
        nargs="*",
        metavar="NAME",
        help="catalogue names, e.g. multi30k, or wmt14_ende wmt13:en-de wmt14/full:en-de into one DIR",
    )
    download.add_argument("--dest", type=Path, help="output folder")
    download.add_argument("--mirror", help="local folder or URL prefix tried before upstream")
    download.add_argument("--retries", type=int, default=3, help="attempts per source (default 3)")
    download.add_argument("--backoff", type=float, default=1.0, help="first retry delay in seconds")
    download.add_argument("--timeout", type=float, default=60.0, help="network timeout in seconds")
    download.add_argument("--list", action="store_true", help="list the catalogue and exit")
    download.set_defaults(func=run_download)

    europarl = subparsers.add_parser(
        "europarl-intersect",
        help="multi-way corpus from X-en bitexts by pivoting on English; writes {train,valid,test}.{lang}",
    )
    europarl.add_argument(
        "--bitext",
        nargs=3,
        action="append",
        metavar=("LANG", "FOREIGN", "ENGLISH"),
        required=True,
        help="one X-en bitext (repeat); the first sets the output order",
    )
    europarl.add_argument("--out-dir", type=Path, required=True)
    europarl.add_argument("--valid", type=int, default=1000)
    europarl.add_argument("--test", type=int, default=1000)
    europarl.add_argument("--seed", type=int, default=1234)
    europarl.set_defaults(func=run_europarl_intersect)


def run_download(args: argparse.Namespace) -> None:
    if args.list:
        for corpus in list_corpora():
            flag = " [registration]" if corpus.gated else ""
            mirror = (
                " [mirrored]" if corpus.mirror_recipe or any(f.mirror for f in corpus.recipe.files) else ""
            )
            print(f"{corpus.name:24s} {corpus.description}{flag}{mirror}")
        return
    if not args.names or args.dest is None:
        raise ConfigError("download: give a corpus NAME and --dest DIR (or --list)")
    if args.retries < 1:
        raise ConfigError("download: --retries must be at least 1")
    for name in args.names:
        safe = re.sub(r"[^A-Za-z0-9_.-]", "_", name)
        manifest_name = "manifest.json" if len(args.names) == 1 else f"manifest.{safe}.json"
        manifest = download_corpus(
            name,
            args.dest,
            mirror=args.mirror,
            retries=args.retries,
            backoff=args.backoff,
            timeout=args.timeout,
            manifest_name=manifest_name,
        )
        summary = {output: entry.get("lines") for output, entry in manifest["outputs"].items()}
        print(json.dumps({"corpus": manifest["corpus"], "outputs": summary}), file=sys.stderr)


def run_europarl_intersect(args: argparse.Namespace) -> None:
    bitexts = {}
    for lang, foreign, english in args.bitext:
        if lang in bitexts:
            raise ConfigError(f"europarl-intersect: language {lang!r} given twice")
        bitexts[lang] = (Path(foreign), Path(english))
    sizes = intersect_files(bitexts, args.out_dir, valid=args.valid, test=args.test, seed=args.seed)
    print(json.dumps(sizes), file=sys.stderr)
