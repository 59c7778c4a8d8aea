"""A Multi30k experiment trained and decoded on one GPU, scored here: every run of the experiment with
the workflow's own settings and commands (by default the composition experiment of
experiments/multi30k_composition.yaml; ``--config`` names another, e.g. the multi-source one).

A GPU machine is lent for minutes at a time, without Snakemake or the text tools, so the campaign is
cut where the GPU matters: ``prepare`` writes each run's settings (exactly the workflow's
``nmtvariants.config.training_runs``, so the run ids are the workflow's) and copies its data from a
workflow folder that has prepared the corpus (BPE, vocabulary, parent streams); ``device`` runs
``nmtvariants train``, ``average`` and ``translate`` for every run, several at a time on the one GPU,
and also checks the CUDA paths the CPU tests cannot reach (DDP over NCCL under torchrun, fp16 AMP with
its gradient scaler); ``finish`` post-processes, scores and tests the decodings here with the same
commands as rules/evaluate.smk and builds the experiment's table of variants against its reference
(mean ± sd over seeds, Δ and p over replicas) with ``composition-table``.

    python benchmarks/multi30k_gpu_campaign.py prepare --workdir ../m30k-campaign   # here
    python benchmarks/multi30k_gpu_campaign.py device --out "$OUT"                  # on the GPU machine
    python benchmarks/multi30k_gpu_campaign.py finish --returned <files> --workdir ../m30k-campaign

``--config experiments/<file>.yaml`` goes before the step; ``prepare --skip REPLICA`` leaves replicas
out (e.g. ``--skip serial-seed2``) where the lease is too short for all of them.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tarfile
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import replace
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
STAGE = REPO / ".gpu"  # what travels to the GPU machine (git-ignored through .git/info/exclude)
CONFIG = REPO / "experiments" / "multi30k_composition.yaml"
RESULTS = REPO / "benchmarks" / "results"
# `translate` decodes on the CPU unless told otherwise (rule translate does not say); here the GPU
DEVICE = "cuda" if os.environ.get("CUDA_VISIBLE_DEVICES", "0") != "" and shutil.which("nvidia-smi") else "cpu"


def run(command: list[str], log: Path) -> float:
    """Run one `nmtvariants` command (this checkout's src first), its output to ``log``; seconds."""
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO / "src"), os.environ.get("PYTHONPATH")])),
    }
    start = time.perf_counter()
    with open(log, "w", encoding="utf-8") as out:
        subprocess.run(
            [sys.executable, "-m", "nmtvariants", *command], check=True, stdout=out, stderr=out, env=env
        )
    return time.perf_counter() - start


# ----------------------------------------------------------------------------------------- prepare
def load(config_file: Path = CONFIG) -> tuple[dict, str]:
    """The resolved config and its one experiment (a campaign is one experiment's runs)."""
    import yaml

    from nmtvariants.config import with_defaults

    config = with_defaults(
        yaml.safe_load(config_file.read_text(encoding="utf-8")), REPO / "schemas" / "config.schema.yaml"
    )
    experiments = list(config["experiments"])
    if len(experiments) != 1:
        sys.exit(f"{config_file}: a campaign runs one experiment; this config has {len(experiments)}")
    return config, experiments[0]


def plan(config_file: Path = CONFIG) -> tuple[dict, list[dict]]:
    """The resolved config and one record per run: id, settings, users, test inputs, decode settings."""
    from nmtvariants.config import decode_settings, input_files, training_runs
    from nmtvariants.layout import bpe_file

    config, experiment = load(config_file)
    decode = decode_settings(config, experiment)
    spec = config["experiments"][experiment]
    corpus = config["corpora"][spec["corpus"]]
    runs = []
    for run in training_runs(config).values():
        src = run.pair.split("-")[0]
        tests = {}
        for testset in spec["evaluate"]["testsets"]:
            extras = input_files(run.corpus, corpus, run.pair, run.inputs, testset)
            tests[testset] = {
                "source": bpe_file(run.corpus, run.pair, f"{testset}.{src}", run.inputs),
                "aux": extras["aux"],
                "sources": extras["sources"],
                "features": extras["features"],
            }
        runs.append(
            {
                "id": run.id,
                "settings": run.settings,
                "users": [list(user) for user in run.users],
                "vocab": bpe_file(run.corpus, run.pair, "vocab.txt", run.inputs),
                "tests": tests,
                "decode": decode,
            }
        )
    return config, runs


def data_paths(runs: list[dict]) -> set[str]:
    """Every data file a run's training or decoding reads (relative to the workflow folder): the
    paths in its data settings (as rule ``train`` lists them), its vocabulary and test inputs."""
    paths = set()
    for one in runs:
        paths.add(one["vocab"])
        for test in one["tests"].values():
            paths.add(test["source"])
            paths.update(test["aux"].values())
            paths.update(test["sources"])
            paths.update([test["features"]] if test["features"] else [])
        for key, value in one["settings"]["data"].items():
            if key == "aux_labels" or value is None:
                continue
            if isinstance(value, dict):
                paths.update(value.values())
            elif isinstance(value, list):
                paths.update(value)
            else:
                paths.add(value)
    return paths


def prepare(args: argparse.Namespace) -> None:
    _, runs = plan(args.config)
    runs = [one for one in runs if not {user[2] for user in one["users"]} <= set(args.skip)]
    shutil.rmtree(STAGE, ignore_errors=True)
    for path in sorted(data_paths(runs)):
        if args.smoke and not (args.workdir / path).is_file():
            continue
        target = STAGE / path
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(args.workdir / path, target)
        if (args.smoke and "/valid." in path) or ("/test_" in path and args.smoke):  # a few sentences
            lines = target.read_text(encoding="utf-8").splitlines(keepends=True)[:8]
            target.write_text("".join(lines), encoding="utf-8")
    (STAGE / "runs.json").write_text(json.dumps(runs, indent=1), encoding="utf-8")
    size = sum(path.stat().st_size for path in STAGE.rglob("*") if path.is_file())
    print(f"{len(runs)} runs, {size / 2**20:.1f} MiB staged in {os.path.relpath(STAGE, REPO)}")


# ------------------------------------------------------------------------------------------ device
def train_and_decode(one: dict, threads: int) -> dict:
    """Train one run, average its last checkpoints, translate its test sets; its record."""
    folder = Path("models/runs") / one["id"]
    folder.mkdir(parents=True, exist_ok=True)
    logs = Path("logs") / one["id"]
    logs.mkdir(parents=True, exist_ok=True)
    record = {"id": one["id"], "users": one["users"]}
    settings = json.dumps(one["settings"])
    record["train_s"] = run(
        [
            "train",
            "--config-json",
            settings,
            "--outdir",
            str(folder),
            "--threads",
            str(threads),
            "--no-progress",
        ],
        logs / "train.log",
    )
    last = str(one["decode"]["average_last"])
    averaged = folder / f"averaged-last{last}.pt"
    run(
        ["average", "--dir", str(folder / "checkpoints"), "--last", last, "--output", str(averaged)],
        logs / "average.log",
    )
    record["translate_s"] = {}
    for testset, test in one["tests"].items():
        # the options rules/common.smk's run_test_input_args gives rule translate
        extras = [word for name, path in test["aux"].items() for word in ("--aux", f"{name}={path}")]
        extras += [word for path in test["sources"] for word in ("--extra-source", path)]
        extras += ["--features", test["features"]] if test["features"] else []
        decode = one["decode"]
        command = [
            "translate",
            "--checkpoint",
            str(averaged),
            "--vocab",
            one["vocab"],
            "--input",
            test["source"],
            *extras,
        ]
        command += [
            "--output",
            str(folder / f"{testset}.bpe.hyp"),
            "--beam",
            str(decode["beam"]),
            "--alpha",
            str(decode["alpha"]),
        ]
        command += [
            "--max-len-a",
            str(decode["max_len_a"]),
            "--max-len-b",
            str(decode["max_len_b"]),
            "--dtype",
            str(decode["dtype"]),
            "--threads",
            str(threads),
            "--device",
            DEVICE,
        ]
        record["translate_s"][testset] = run(command, logs / f"translate-{testset}.log")
    (folder / "device_record.json").write_text(json.dumps(record), encoding="utf-8")
    return record


def cuda_checks(logs: Path) -> dict:
    """The CUDA-only paths on a short run of the first run's settings: DDP over NCCL (torchrun, one
    process: the NCCL init and the DDP wrapper) and fp16 AMP with its gradient scaler."""
    runs = json.loads((STAGE / "runs.json").read_text(encoding="utf-8"))
    base = runs[0]["settings"]
    checks = {}
    for name, train in (("ddp_nccl_bf16", {"amp": "bf16"}), ("fp16_amp", {"amp": "fp16"})):
        settings = json.loads(json.dumps(base))
        settings["train"].update({**train, "max_updates": 60, "valid_every": 30, "save_every": 30})
        outdir = Path("models/checks") / name
        command = [
            "train",
            "--config-json",
            json.dumps(settings),
            "--outdir",
            str(outdir),
            "--threads",
            "2",
            "--no-progress",
        ]
        launcher = (
            [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=1", "-m"]
            if name.startswith("ddp")
            else [sys.executable, "-m"]
        )
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO / "src"), os.environ.get("PYTHONPATH")])),
        }
        start = time.perf_counter()
        with open(logs / f"{name}.log", "w", encoding="utf-8") as out:
            result = subprocess.run([*launcher, "nmtvariants", *command], stdout=out, stderr=out, env=env)
        checks[name] = {"rc": result.returncode, "seconds": time.perf_counter() - start}
        if (outdir / "run.json").is_file():
            checks[name]["run"] = json.loads((outdir / "run.json").read_text(encoding="utf-8"))
    return checks


def device(args: argparse.Namespace) -> None:
    import torch

    os.chdir(STAGE)
    out = Path(args.out)
    Path("logs").mkdir(exist_ok=True)
    runs = json.loads(Path("runs.json").read_text(encoding="utf-8"))
    if args.limit:  # a smoke test: the first runs that need no parses, a few updates each
        runs = [one for one in runs if not one["settings"]["data"].get("train_aux")][: args.limit]
        for one in runs:
            one["settings"]["train"].update({"max_updates": 4, "valid_every": 2, "save_every": 2})
    info = {
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "gpu": torch.cuda.get_device_name(0) if torch.cuda.is_available() else "none",
        "started": time.time(),
    }
    print(json.dumps(info), flush=True)
    bundle = out / "runs.tar"
    records, seen = [], set()
    with ThreadPoolExecutor(max_workers=args.parallel + 1) as pool:
        run_checks = torch.cuda.is_available() and not args.no_checks
        checks = pool.submit(cuda_checks, Path("logs")) if run_checks else None
        threads = max(1, (os.cpu_count() or 2) // args.parallel)
        futures = [pool.submit(train_and_decode, one, threads) for one in runs]
        for future in as_completed(futures):
            try:
                record = future.result()
            except subprocess.CalledProcessError as error:
                print(f"failed: {error}", flush=True)
                continue
            records.append(record)
            keep_run(record, [*runs[0]["tests"]], bundle)
            variant = record["users"][0][2].split("-seed")[0]
            if variant not in seen:  # one model per variant, for the table's parameter counts
                seen.add(variant)
                save_weights(Path("models/runs") / record["id"] / "final.pt", variant, out / "weights.tar")
            info["records"] = records
            write_info(info, out)  # after every run: a call cut off at its limit keeps what finished
            print(f"done {record['id']} train {record['train_s']:.0f} s", flush=True)
        info["checks"] = checks.result() if checks else "not run (no CUDA device, or --no-checks)"
    info["finished"] = time.time()
    write_info(info, out)
    with tarfile.open(out / "logs.tar", "w") as tar:
        tar.add("logs")
    print(json.dumps({k: v for k, v in info.items() if k != "records"}, indent=1))


def keep_run(record: dict, testsets: list[str], bundle: Path) -> None:
    """Append a finished run's record, log and decodings to the bundle that comes back."""
    folder = Path("models/runs") / record["id"]
    with tarfile.open(bundle, "a") as tar:
        for name in ("run.json", "train_log.csv", "device_record.json", *(f"{t}.bpe.hyp" for t in testsets)):
            tar.add(folder / name, arcname=f"{record['id']}/{name}")


def save_weights(checkpoint: Path, variant: str, bundle: Path) -> None:
    """Append ``<variant>.pt`` to ``bundle``: the model's weights (bf16) and config only, what a
    parameter count reads, at a third of the size. One bundle, because at most 8 files come back from
    the GPU machine (a fifth variant's file was left behind as separate files)."""
    import torch

    state = torch.load(checkpoint, map_location="cpu", weights_only=False)
    weights = {k: v.to(torch.bfloat16) if v.is_floating_point() else v for k, v in state["model"].items()}
    saved = checkpoint.with_name(f"{variant}.weights.pt")
    torch.save(
        {"model": weights, "model_config": state["model_config"], "vocab_size": state["vocab_size"]}, saved
    )
    with tarfile.open(bundle, "a") as tar:
        tar.add(saved, arcname=f"{variant}.pt")


def write_info(info: dict, out: Path) -> None:
    (out / "device.json").write_text(json.dumps(info, indent=1), encoding="utf-8")


# ------------------------------------------------------------------------------------------ finish
def finish(args: argparse.Namespace) -> None:
    """Score what came back as rules/evaluate.smk does, in a workflow-like folder (``--workdir``,
    whose data/ holds the corpus), then build the table and the campaign record
    (``benchmarks/results/<config>_gpu.md`` and ``<config>_gpu_campaign.json``)."""
    from nmtvariants.config import run_index, training_runs
    from nmtvariants.reporting.manifest import write_manifest
    from nmtvariants.studies.composition import tables as composition
    from nmtvariants.studies.composition.plan import STUDY, CompositionPlan

    returned, work = args.returned.resolve(), args.workdir.resolve()
    os.chdir(work)
    with tarfile.open(returned / "runs.tar") as tar:
        tar.extractall("models/runs", filter="data")
    config, experiment = load(args.config)
    runs = training_runs(config)
    run_of = run_index(runs)
    spec = config["experiments"][experiment]
    done = {path.name for path in Path("models/runs").iterdir() if (path / "device_record.json").is_file()}
    logs = Path("logs/gpu")
    logs.mkdir(parents=True, exist_ok=True)
    replicas = [user for user, run in run_of.items() if run in done and user[0] == experiment]
    for experiment, pair, replica in replicas:
        for testset in spec["evaluate"]["testsets"]:
            folder = Path("results") / experiment / pair / replica
            folder.mkdir(parents=True, exist_ok=True)
            bpe = Path("models/runs") / run_of[experiment, pair, replica] / f"{testset}.bpe.hyp"
            hyp, lang = folder / f"{testset}.hyp", pair.split("-")[1]
            run(
                ["postprocess", "-l", lang, "--truecased", "-o", str(hyp), str(bpe)],
                logs / f"post-{replica}-{testset}.log",
            )
            ref = f"data/{spec['corpus']}/raw/{testset}.{lang}"
            command = [
                "evaluate",
                "--hyp",
                str(hyp),
                "--ref",
                ref,
                "-l",
                lang,
                "--metrics",
                ",".join(spec["evaluate"]["metrics"]),
            ]
            command += [
                "--system",
                f"{experiment}/{pair}/{replica}",
                "--testset",
                testset,
                "--json",
                str(folder / f"{testset}.scores.json"),
            ]
            run(command, logs / f"eval-{replica}-{testset}.log")
    # the composition table of the campaign's experiment, whichever study the config gives it
    plan = CompositionPlan({**config, "experiments": {experiment: {**spec, "study": STUDY}}}, run_of)
    reference = plan.reference_variant(experiment)
    entries = [
        entry
        for entry in plan.manifest(experiment)
        if (entry.experiment, entry.pair, _replica(entry, config)) in set(replicas)
    ]
    for variant in dict.fromkeys(entry.variant for entry in entries):
        if variant == reference:
            continue
        for testset in spec["evaluate"]["testsets"]:
            mine = [e for e in entries if e.variant == variant and e.testset == testset]
            theirs = [e for e in entries if e.variant == reference and e.testset == testset]
            command = ["significance"]
            for option, group in (("--baseline", theirs), ("--system", mine)):
                for entry in group:
                    command += [option, entry.files["scores"].replace(".scores.json", ".hyp")]
            lang = mine[0].pair.split("-")[1]
            command += [
                "--ref",
                f"data/{spec['corpus']}/raw/{testset}.{lang}",
                "-l",
                lang,
                "--metrics",
                ",".join(composition.METRICS),
            ]
            command += [
                "--samples",
                "1000",
                "--seed",
                str(config["seed"]),
                "--json",
                mine[0].files["significance"],
            ]
            run(command, logs / f"sig-{variant}-{testset}.log")
    checkpoints = Path("checkpoints")
    checkpoints.mkdir(exist_ok=True)
    with tarfile.open(returned / "weights.tar") as tar:
        tar.extractall(checkpoints, filter="data")
    # the parameter count reads one model per variant (weights only, as the GPU machine saved them)
    entries = [
        replace(entry, files={**entry.files, "checkpoint": str(checkpoints / f"{entry.variant}.pt")})
        for entry in entries
    ]
    manifest = write_manifest(logs / "composition.manifest.json", entries)
    table = RESULTS / f"{args.config.stem}_gpu.md"
    title = f"{experiment} on one GPU: each variant beside {reference}"
    run(
        [
            "composition-table",
            "--manifest",
            str(manifest),
            "--reference",
            reference,
            "--title",
            title,
            "--out",
            str(table),
        ],
        logs / "table.log",
    )
    device_info = json.loads((returned / "device.json").read_text(encoding="utf-8"))
    (RESULTS / f"{args.config.stem}_gpu_campaign.json").write_text(
        json.dumps(device_info, indent=1) + "\n", encoding="utf-8"
    )
    print(table.read_text(encoding="utf-8"))


def _replica(entry, config) -> str:
    from nmtvariants.config import experiment_seeds, replica_name

    return replica_name(entry.variant, entry.seed, experiment_seeds(config, entry.experiment))


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--config", type=lambda path: Path(path).resolve(), default=CONFIG, help="the experiment's config"
    )
    commands = parser.add_subparsers(dest="command", required=True)
    p = commands.add_parser("prepare")
    p.add_argument("--workdir", type=Path, required=True, help="a workflow folder with the corpus prepared")
    p.add_argument("--smoke", action="store_true", help="stage what is there (for `device --limit`)")
    p.add_argument("--skip", action="append", default=[], help="a replica left out (repeatable)")
    p.set_defaults(func=prepare)
    d = commands.add_parser("device")
    d.add_argument("--out", required=True)
    d.add_argument("--parallel", type=int, default=5, help="runs at a time on the GPU")
    d.add_argument("--limit", type=int, default=0, help="only the first N runs (a smoke test)")
    d.add_argument("--no-checks", action="store_true", help="leave out the CUDA checks (DDP/NCCL, fp16)")
    d.set_defaults(func=device)
    f = commands.add_parser("finish")
    f.add_argument(
        "--returned", type=Path, required=True, help="the folder the GPU machine's files came back to"
    )
    f.add_argument(
        "--workdir", type=Path, required=True, help="a workflow-like folder whose data/ holds the corpus"
    )
    f.set_defaults(func=finish)
    args = parser.parse_args()
    args.func(args)


if __name__ == "__main__":
    main()
