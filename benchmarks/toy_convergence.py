"""Which training setting of the demo's toy baseline trains every seed to its plateau, and at what cost
(or, with ``--system EXPERIMENT/VARIANT``, where another toy system of the demo gets to with more updates).

The demo's toy models stop while they are still learning (issue 25): their validation perplexity is
still falling fast at the last update, so seeds differ by tens of BLEU and a study difference is
noise. A setting is good enough when every seed's validation perplexity moved by under 2% over the
last fifth of its updates (``plateau.at_plateau`` in ``run.json``) and the seeds' test BLEU lies
within 1 point (max - min); among those, the cheapest wins, because the whole demo has to fit a
few minutes on two cores. This script measures both sides of that trade for several settings at
once: it trains the toy baseline once per setting and seed, one run after the other on one thread
(so the train seconds compare), and then averages, decodes, post-processes and scores the test set
exactly as the workflow does (rules/train.smk, rules/evaluate.smk: ``average``, ``translate``,
``postprocess``, ``evaluate``, with the decode settings and metrics of the ``baseline`` experiment).

Everything that is not named in a ``--setting`` comes from the workflow config (``--config``,
defaults filled in from the schema), so the first setting ``demo:`` is the demo's own baseline and
the other rows are priced against it. A setting is ``NAME:key=value,...`` with keys from
``batch_tokens, lr_scale, warmup, lr_cooldown, max_updates, valid_every, save_every, keep_last,
average_last`` (``lr_cooldown=START/END/FLOOR``: train.lr_cooldown's shares; ``none``: no cool-down).
Runs go to ``--workdir/<run id>/`` (the hash of the run's settings, seed included, as in the
workflow's ``models/runs/``): a run already finished there is reused with its recorded train time,
so an interrupted measurement resumes, and two rows that differ only in ``average_last`` share their
runs and cost one training; with ``--reuse WORK/models/runs`` (repeatable), a run the workflow finished there
(the same id: the same settings) is scored without training it again. ``--data-root``
is a work folder where the workflow has built ``data/toyworld`` (e.g. a finished ``make demo``).

    PYTHONPATH=src OMP_NUM_THREADS=1 python benchmarks/toy_convergence.py --data-root ../shared/demo \\
        --workdir ../shared/toy_convergence --seeds 1 2 3 --setting demo: \\
        --setting b1024:batch_tokens=1024,warmup=100,max_updates=1600,valid_every=320 \\
        [--threads 1] [--out benchmarks/results/toy_convergence]
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import platform
import resource
import shlex
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from nmtvariants.config import content_id, decode_settings, run_settings, with_defaults
from nmtvariants.fileio import atomic_write
from nmtvariants.training.plateau import PLATEAU_TOLERANCE, last_fifth_change, valid_curve

PAIR, TESTSET = "en-de", "test"  # the default pair (``--pair``)
BASELINE = "baseline/baseline"  # the demo's toy baseline: experiment/variant
TRAIN_KEYS = (
    "batch_tokens", "lr_scale", "warmup", "lr_cooldown", "max_updates", "valid_every", "save_every",
    "keep_last", "amp",
)  # fmt: skip
TRAIN_DEFAULTS = {"lr_cooldown": None, "amp": None}  # keys a config may leave out (the trainer's default)
STR_KEYS = {"amp"}
COOLDOWN_KEYS = ("start", "end", "floor")  # lr_cooldown=START/END/FLOOR in a --setting
INT_KEYS = {"batch_tokens", "warmup", "max_updates", "valid_every", "save_every", "keep_last", "average_last"}
SPREAD_LIMIT = 1.0  # BLEU, max - min over the seeds (issue 25)


@dataclass
class Setting:
    """One row of the comparison: the train settings that differ from the config, and the averaging."""

    name: str
    overrides: dict[str, Any]
    average_last: int


def parse_setting(text: str, average_last: int) -> Setting:
    """``NAME:key=value,...`` -> Setting; an unknown key is an error rather than a silently ignored
    typo, since a mistyped lever would make two rows measure the same thing."""
    name, _, body = text.partition(":")
    if not name or "/" in name:
        raise ValueError(f"{text!r}: a setting is NAME:key=value,... with a plain NAME")
    overrides: dict[str, Any] = {}
    for item in filter(None, body.split(",")):
        key, sep, value = item.partition("=")
        if not sep or key not in (*TRAIN_KEYS, "average_last"):
            raise ValueError(
                f"{text!r}: {item!r} is not key=value with a key among {(*TRAIN_KEYS, 'average_last')}"
            )
        if key == "lr_cooldown":
            shares = [float(share) for share in value.split("/")] if value != "none" else None
            overrides[key] = None if shares is None else dict(zip(COOLDOWN_KEYS, shares, strict=False))
        elif key in STR_KEYS:
            overrides[key] = value
        else:
            overrides[key] = int(value) if key in INT_KEYS else float(value)
    average = int(overrides.pop("average_last", average_last))
    return Setting(name, overrides, average)


def spread(values: Sequence[float]) -> dict[str, float | int | None]:
    """Mean, sample standard deviation (None for one value) and max - min of the seeds' scores."""
    if not values:
        return {"n": 0, "mean": None, "sd": None, "min": None, "max": None, "spread": None}
    return {
        "n": len(values),
        "mean": statistics.fmean(values),
        "sd": statistics.stdev(values) if len(values) > 1 else None,
        "min": min(values),
        "max": max(values),
        "spread": max(values) - min(values),
    }


def curve_record(train_log: str | Path) -> dict[str, Any]:
    """The validation curve and its last-fifth change, recomputed from the log with the library's
    rule, so the table can be checked against ``run.json`` rather than trusting either alone."""
    curve = valid_curve(train_log)
    change = last_fifth_change(curve)
    return {
        "curve": [[update, ppl] for update, ppl in curve],
        "last_fifth_change": change,
        "at_plateau": None if change is None else change < PLATEAU_TOLERANCE,
    }


def verdict(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Whether a setting meets both criteria of issue 25 over its seeds."""
    plateaus = [row["at_plateau"] for row in rows]
    bleu = spread([row["bleu"] for row in rows if row["bleu"] is not None])
    all_plateau = bool(plateaus) and all(p is True for p in plateaus)
    narrow = bleu["spread"] is not None and bleu["n"] > 1 and bleu["spread"] <= SPREAD_LIMIT
    return {
        "all_at_plateau": all_plateau,
        "spread_within_limit": narrow,
        "meets_both": all_plateau and narrow,
    }


def _run(command: list[str], cwd: Path, log: Path) -> None:
    with open(log, "w", encoding="utf-8") as handle:
        done = subprocess.run(command, cwd=cwd, stdout=handle, stderr=subprocess.STDOUT, check=False)
    if done.returncode:
        sys.exit(f"{' '.join(command)} failed ({done.returncode}); see {log}")


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def train(
    settings: dict[str, Any], run: Path, data_root: Path, threads: int, cli: list[str]
) -> dict[str, Any]:
    """Train one run unless the same settings finished there before; return its timing record."""
    timing_file, settings_file = run / "timing.json", run / "settings.json"
    finished = timing_file.exists() and settings_file.exists() and (run / "final.pt").exists()
    if finished and json.loads(settings_file.read_text(encoding="utf-8")) == settings:
        return {**json.loads(timing_file.read_text(encoding="utf-8")), "reused": True}
    if run.exists():  # another setting or an unfinished run: start clean, never resume a mix
        subprocess.run(["rm", "-rf", str(run)], check=True)
    run.mkdir(parents=True)
    with atomic_write(settings_file) as handle:
        handle.write(json.dumps(settings, indent=1) + "\n")
    load, wall, cpu = os.getloadavg()[0], time.perf_counter(), _children_cpu()
    command = [*cli, "train", "--config-json", json.dumps(settings), "--outdir", str(run.resolve())]
    _run([*command, "--threads", str(threads), "--no-progress"], data_root, run / "train.log")
    timing = {
        "train_s": time.perf_counter() - wall,
        "train_cpu_s": _children_cpu() - cpu,
        "load_before": load,
        "load_after": os.getloadavg()[0],
    }
    with atomic_write(timing_file) as handle:
        handle.write(json.dumps(timing, indent=1) + "\n")
    return {**timing, "reused": False}


def adopt(settings: dict[str, Any], run: Path, finished: Path) -> dict[str, Any]:
    """Take a run that the workflow trained (``models/runs/<run id>/`` of a work folder, the same id
    and so the same settings) instead of training it again: its checkpoints are linked, its log and
    run.json copied, and its train time is the one its log recorded (the workflow's, with whatever
    ran beside it, which the record's notes must say)."""
    if run.exists():
        subprocess.run(["rm", "-rf", str(run)], check=True)
    run.mkdir(parents=True)
    (run / "checkpoints").symlink_to((finished / "checkpoints").resolve(), target_is_directory=True)
    for name in ("train_log.csv", "run.json"):
        (run / name).write_bytes((finished / name).read_bytes())
    (run / "final.pt").symlink_to((finished / "final.pt").resolve())
    with open(run / "train_log.csv", encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle))
    timing = {"train_s": float(rows[-1]["elapsed_s"]), "adopted_from": str(finished)}
    for name, record in (("settings.json", settings), ("timing.json", timing)):
        with atomic_write(run / name) as handle:
            handle.write(json.dumps(record, indent=1) + "\n")
    return {**timing, "reused": True}


def score(run: Path, settings: dict[str, Any], decode: dict[str, Any], spec: dict[str, Any],
          config: dict[str, Any], data_root: Path, average_last: int, threads: int,
          cli: list[str], pair: str = PAIR) -> dict[str, Any]:  # fmt: skip
    """Average the last checkpoints, decode, post-process and score the test set as the workflow
    does; reused when the same averaging and search settings scored this run before."""
    decode = {**decode, "average_last": average_last}
    folder = run / f"decode-last{average_last}"
    scores_file, decode_file = folder / f"{TESTSET}.scores.json", folder / "decode.json"
    scored = scores_file.exists() and decode_file.exists()
    if scored and json.loads(decode_file.read_text(encoding="utf-8")) == decode:
        return json.loads(scores_file.read_text(encoding="utf-8"))["scores"]
    folder.mkdir(parents=True, exist_ok=True)
    src, tgt = pair.split("-")
    corpus = config["corpora"][spec["corpus"]]
    bpe = Path(settings["data"]["vocab"]).parent
    model, bpe_hyp, hyp = folder / "averaged.pt", folder / f"{TESTSET}.bpe.hyp", folder / f"{TESTSET}.hyp"
    steps = [
        [*cli, "average", "--dir", str((run / "checkpoints").resolve()), "--last", str(average_last),
         "--output", str(model.resolve())],
        [*cli, "translate", "--checkpoint", str(model.resolve()), "--vocab", str(bpe / "vocab.txt"),
         "--input", str(bpe / f"{TESTSET}.{src}"), "--output", str(bpe_hyp.resolve()),
         "--beam", str(decode["beam"]), "--alpha", str(decode["alpha"]),
         "--max-len-a", str(decode["max_len_a"]), "--max-len-b", str(decode["max_len_b"]),
         "--dtype", str(decode["dtype"]), "--threads", str(threads)],
        [*cli, "postprocess", "-l", tgt, *(["--truecased"] if corpus["preprocess"]["truecase"] else []),
         "-o", str(hyp.resolve()), str(bpe_hyp.resolve())],
        [*cli, "evaluate", "--hyp", str(hyp.resolve()), "--ref", f"data/{spec['corpus']}/raw/{TESTSET}.{tgt}",
         "-l", tgt, "--metrics", ",".join(spec["evaluate"]["metrics"]), "--system", str(run),
         "--testset", TESTSET, "--json", str(scores_file.resolve())],
    ]  # fmt: skip
    for number, step in enumerate(steps):
        _run(step, data_root, folder / f"{number}-{step[len(cli)]}.log")
    with atomic_write(decode_file) as handle:
        handle.write(json.dumps(decode, indent=1) + "\n")
    return json.loads(scores_file.read_text(encoding="utf-8"))["scores"]


def recorded_command(argv: list[str]) -> str:
    """The command line that made the result, without the ``--note`` paragraphs (they are printed
    above the table anyway and would bury the settings that matter)."""
    kept, skip = [], False
    for arg in argv:
        if skip:
            skip = False
        elif arg == "--note":
            skip = True
        elif not arg.startswith("--note="):
            kept.append(arg)
    return "python benchmarks/toy_convergence.py " + shlex.join(kept)


def _fmt(value: float | None, digits: int = 2) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def cooldown_text(shares: dict[str, float] | None) -> str:
    """``start-end → floor`` of a cool-down (shares of the updates), or – for the plain Noam curve."""
    if not shares:
        return "–"
    return f"{shares['start']:g}-{shares.get('end', 1.0):g} → {shares.get('floor', 0.0):g}"


def markdown(result: dict[str, Any]) -> str:
    """The comparison (one row per setting) and each seed's validation curve."""
    first = result["settings"][0]["train_s"]["mean"]
    lines = [
        f"# Toy {result.get('system', BASELINE)}: training until the validation perplexity levels off",
        "",
        f"Measured {result['date']} on {result['machine']}, {result['threads']} thread per run, runs one"
        f" after the other; torch {result['torch']}. Toyworld {result.get('pair', PAIR)}, tiny preset,"
        f" seeds {result['seeds']};"
        f" test BLEU and chrF of the average of the last checkpoints, beam {result['decode']['beam']}, alpha"
        f" {result['decode']['alpha']}, scored on the raw references as the workflow does. *Plateau*: the"
        f" validation perplexity moved by under {PLATEAU_TOLERANCE:.0%} over the last fifth of the updates"
        f" (run.json `plateau`); *spread*: max - min BLEU over the seeds (target <= {SPREAD_LIMIT:g}).",
        "",
        f"Command: `{result['command']}`",
        "",
        *[paragraph + "\n" for paragraph in result["notes"]],
        "| setting | batch tok | lr_scale | warmup | cool-down | updates | valid every | avg | train s/run"
        " | × first |"
        " last-fifth change per seed | plateau | BLEU per seed | BLEU mean ± sd | spread | chrF mean"
        " | both |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|---|---:|---:|---:|---|",
    ]
    for row in result["settings"]:
        t, seeds = row["train"], row["seeds"]
        changes = " / ".join(f"{100 * s['last_fifth_change']:.2f}%" if s["last_fifth_change"] is not None
                             else "–" for s in seeds)  # fmt: skip
        plateau = " ".join("yes" if s["at_plateau"] else "no" for s in seeds)
        bleu, chrf = row["bleu"], row["chrf"]
        both = "yes" if row["verdict"]["meets_both"] else "no"
        lines.append(
            f"| {row['name']} | {t['batch_tokens']} | {t['lr_scale']:g} | {t['warmup']} |"
            f" {cooldown_text(t.get('lr_cooldown'))} |"
            f" {t['max_updates']} | {t['valid_every']} | {row['average_last']} |"
            f" {row['train_s']['mean']:.0f} |"
            f" {row['train_s']['mean'] / first:.2f} | {changes} | {plateau} |"
            f" {' / '.join(_fmt(s['bleu']) for s in seeds)} | {_fmt(bleu['mean'])} ± {_fmt(bleu['sd'])} |"
            f" {_fmt(bleu['spread'])} | {_fmt(chrf['mean'])} | {both} |"
        )
    lines += ["", "Validation perplexity at each validation (update: ppl):", ""]
    for row in result["settings"]:
        for s in row["seeds"]:
            curve = ", ".join(f"{u}: {p:.3f}" for u, p in s["curve"])
            lines.append(
                f"- {row['name']}, seed {s['seed']} ({s['train_s']:.0f} s, BLEU {_fmt(s['bleu'])}, chrF"
                f" {_fmt(s['chrf'])}, BP {_fmt(s['bp'], 3)}): {curve}"
            )
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--setting", action="append", required=True, help="NAME:key=value,... (repeatable)")
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument(
        "--system", default=BASELINE, help=f"EXPERIMENT/VARIANT of the config (default {BASELINE})"
    )
    parser.add_argument("--pair", default=PAIR, help=f"one of the experiment's pairs (default {PAIR})")
    parser.add_argument(
        "--data-root", default=".", help="work folder holding data/toyworld (built by the workflow)"
    )
    parser.add_argument("--workdir", required=True, help="where the runs go (reused when finished)")
    parser.add_argument(
        "--reuse",
        type=Path,
        action="append",
        default=[],
        help="a work folder's models/runs (repeatable): a run the workflow finished there is"
        " scored, not trained again (its train time is the workflow's)",
    )
    parser.add_argument("--config", default="config.yaml")
    parser.add_argument("--schema", default="schemas/config.schema.yaml")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--date", default=time.strftime("%Y-%m-%d"))
    parser.add_argument(
        "--note", action="append", default=[], help="a paragraph for the markdown (repeatable)"
    )
    parser.add_argument("--out", default="benchmarks/results/toy_convergence")
    args = parser.parse_args(argv)

    with open(args.config, encoding="utf-8") as handle:
        config = with_defaults(yaml.safe_load(handle), args.schema)
    experiment, _, variant = args.system.partition("/")
    if (
        experiment not in config["experiments"]
        or variant not in config["experiments"][experiment]["variants"]
    ):
        parser.error(f"--system {args.system}: no such experiment/variant in {args.config}")
    spec = config["experiments"][experiment]
    if args.pair not in spec["pairs"]:
        parser.error(f"--pair {args.pair}: not among {experiment}'s pairs {spec['pairs']}")
    decode = decode_settings(config, experiment)
    average_default = int(decode.pop("average_last"))
    settings = [parse_setting(text, average_default) for text in args.setting]
    names = [s.name for s in settings]
    if len(set(names)) != len(names):
        parser.error(f"setting names must differ: {names}")
    data_root, workdir = Path(args.data_root), Path(args.workdir)
    cli = [sys.executable, "-m", "nmtvariants"]
    rows = []
    for setting in settings:
        seeds = []
        for seed in args.seeds:
            run_config = run_settings(config, experiment, args.pair, variant, seed)
            merged = {**run_config["train"], **setting.overrides}  # None: the trainer's default
            run_config["train"] = {key: value for key, value in merged.items() if value is not None}
            run = workdir / content_id(run_config)  # rows that differ only in averaging share it
            print(f"{setting.name} seed {seed}: training", flush=True)
            finished = [
                folder / run.name for folder in args.reuse if (folder / run.name / "final.pt").exists()
            ]
            if finished and (finished[0] / "run.json").exists():
                timing = adopt(run_config, run, finished[0])
            else:
                timing = train(run_config, run, data_root, args.threads, cli)
            scores = score(run, run_config, decode, spec, config, data_root, setting.average_last,
                           args.threads, cli, args.pair)  # fmt: skip
            record = json.loads((run / "run.json").read_text(encoding="utf-8"))
            seeds.append({
                "seed": seed,
                "run": run.name,
                **curve_record(run / "train_log.csv"),
                "run_json_plateau": record["plateau"],
                "bleu": scores["bleu"]["score"],
                "bp": scores["bleu"].get("bp"),
                "chrf": scores["chrf"]["score"],
                "ter": scores.get("ter", {}).get("score"),
                **timing,
            })  # fmt: skip
            print(
                f"  {timing['train_s']:.0f} s, last-fifth change {seeds[-1]['last_fifth_change']},"
                f" BLEU {seeds[-1]['bleu']:.2f}"
            )
        rows.append({
            "name": setting.name,
            "train": {key: run_config["train"].get(key, TRAIN_DEFAULTS.get(key)) for key in TRAIN_KEYS},
            "average_last": setting.average_last,
            "seeds": seeds,
            "train_s": spread([s["train_s"] for s in seeds]),
            "bleu": spread([s["bleu"] for s in seeds]),
            "chrf": spread([s["chrf"] for s in seeds]),
            "verdict": verdict(seeds),
        })  # fmt: skip
    import torch

    from nmtvariants.hardware import cpu_model

    result = {
        "benchmark": "toy_convergence",
        "system": args.system,
        "pair": args.pair,
        "date": args.date,
        "machine": f"{cpu_model()}, {os.cpu_count()} cores",
        "threads": args.threads,
        "python": platform.python_version(),
        "torch": torch.__version__,
        "command": recorded_command(list(argv if argv is not None else sys.argv[1:])),
        "seeds": args.seeds,
        "decode": decode,
        "notes": args.note,
        "settings": rows,
    }  # fmt: skip
    out = Path(args.out)
    with atomic_write(out.with_suffix(".json")) as handle:
        handle.write(json.dumps(result, indent=1) + "\n")
    text = markdown(result)
    with atomic_write(out.with_suffix(".md")) as handle:
        handle.write(text)
    print(text)


if __name__ == "__main__":
    main()
