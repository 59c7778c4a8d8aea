"""Train a Stanza tagger and dependency parser offline on a UD treebank, for :mod:`stanza_parse`.

Stanza's pretrained models live on a hub that the offline machines cannot reach, so the pipeline
trains its own with Stanza's entry points (``python -m stanza.models.tagger`` / ``.parser``) and
``--no_pretrain`` (no word vectors, no character language model: neither can be downloaded). The
models land in ``model_dir`` as ``<lang>_tagger.pt`` and ``<lang>_parser.pt``, the names the parse
step looks for, next to Stanza's logs (``<lang>_tagger.log``, ``<lang>_parser.log``). Each model is
trained in a scratch directory inside ``model_dir`` and moved into place only when its run
succeeded, so an interrupted run never leaves a half-written model.

The step budget is the caller's (``tagger_steps``, ``parser_steps``); the sizes default to a reduced
Stanza (hidden 200 / 128, character hidden 64, two parser layers instead of three) so that a CPU run
is feasible; Stanza's own defaults (hidden 400, three layers, 50k steps) are the full recipe for a
GPU. The dev scores Stanza logs are its own; the study evaluates UAS/LAS separately
(``nmtvariants stanza-score``). What was trained (treebank, sentences, steps, sizes) is recorded in
``<lang>_training.json`` beside the models, so that the parser table can say which parser it scored.
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from nmtvariants.errors import InputError
from nmtvariants.fileio import PathLike, atomic_write
from nmtvariants.syntax.conllu import read_conllu
from nmtvariants.syntax.stanza_parse import StanzaModels


@dataclass(frozen=True)
class StanzaSizes:
    tagger_hidden: int = 200
    parser_hidden: int = 128
    char_hidden: int = 64
    biaffine_hidden: int = 128  # tagger and parser (Stanza: 400; the tagger's cost is dominated by it)
    composite_hidden: int = 100  # the tagger's UFeats classifier (Stanza's default)
    parser_layers: int = 2
    batch_size: int = 1000


def _run(module: str, args: list[str], log_path: Path) -> None:
    env = dict(os.environ)
    with log_path.open("w") as log:
        result = subprocess.run(
            [sys.executable, "-m", module, *args], stdout=log, stderr=subprocess.STDOUT, env=env, check=False
        )
    if result.returncode != 0:
        tail = log_path.read_text(errors="replace").strip().splitlines()[-1:] or ["(no output)"]
        raise InputError(f"{module} failed (exit {result.returncode}): {tail[0]}; the full log is {log_path}")


def train_stanza(
    train: PathLike,
    dev: PathLike,
    model_dir: PathLike,
    lang: str,
    tagger_steps: int,
    parser_steps: int,
    sizes: StanzaSizes = StanzaSizes(),
    device: str = "cpu",
    seed: int = 1234,
) -> StanzaModels:
    """Train ``<lang>_tagger.pt`` and ``<lang>_parser.pt`` into ``model_dir``; return their location."""
    for path in (Path(train), Path(dev)):
        if not path.is_file():
            raise InputError(f"{path}: treebank not found; give a CoNLL-U file (UD train / dev)")
    models = StanzaModels(Path(model_dir), lang)
    models.model_dir.mkdir(parents=True, exist_ok=True)
    common = [
        "--train_file", str(train), "--eval_file", str(dev), "--lang", lang, "--shorthand", f"{lang}_nmtv",
        "--mode", "train", "--no_pretrain", "--batch_size", str(sizes.batch_size), "--char_hidden_dim",
        str(sizes.char_hidden), "--seed", str(seed), "--device", device,
    ]  # fmt: skip
    with tempfile.TemporaryDirectory(prefix=".stanza-train-", dir=models.model_dir) as scratch_name:
        scratch = Path(scratch_name)
        _run(
            "stanza.models.tagger",
            [
                *common,
                "--save_dir",
                str(scratch),
                "--save_name",
                models.tagger.name,
                "--output_file",
                str(scratch / "dev.pos.conllu"),
                "--max_steps",
                str(tagger_steps),
                "--eval_interval",
                str(max(1, tagger_steps // 4)),
                "--hidden_dim",
                str(sizes.tagger_hidden),
                "--deep_biaff_hidden_dim",
                str(sizes.biaffine_hidden),
                "--composite_deep_biaff_hidden_dim",
                str(sizes.composite_hidden),
            ],
            models.model_dir / f"{lang}_tagger.log",
        )
        _run(
            "stanza.models.parser",
            [
                *common,
                "--save_dir",
                str(scratch),
                "--save_name",
                models.parser.name,
                "--output_file",
                str(scratch / "dev.parse.conllu"),
                "--max_steps",
                str(parser_steps),
                "--eval_interval",
                str(max(1, parser_steps // 4)),
                "--hidden_dim",
                str(sizes.parser_hidden),
                "--deep_biaff_hidden_dim",
                str(sizes.biaffine_hidden),
                "--num_layers",
                str(sizes.parser_layers),
                "--no_checkpoint",
            ],
            models.model_dir / f"{lang}_parser.log",
        )
        for target in (models.tagger, models.parser):
            produced = scratch / target.name
            if not produced.is_file():
                raise InputError(
                    f"{produced}: Stanza finished without writing the model; "
                    f"see the logs in {models.model_dir}"
                )
            os.replace(produced, target)
    record = {
        "train": str(train),
        "dev": str(dev),
        "train_sentences": len(read_conllu(train, validate=False)),
        "tagger_steps": tagger_steps,
        "parser_steps": parser_steps,
        "sizes": dataclasses.asdict(sizes),
        "device": device,
        "seed": seed,
    }
    with atomic_write(training_record(models)) as out:
        json.dump(record, out, indent=2, sort_keys=True)
        out.write("\n")
    return models


def training_record(models: StanzaModels) -> Path:
    """``<model_dir>/<lang>_training.json``: how :func:`train_stanza` trained the models."""
    return models.model_dir / f"{models.lang}_training.json"
