"""The paper configs' data path at WMT size: wall time, CPU time and peak RSS of every stage.

``experiments/emelin2019.yaml``'s WMT14 EN-DE corpus (Moses normalise/tokenise with ``-a`` and
escaping, cleaning 1-80 words ratio 9, truecasing, joint BPE with 32,000 merges and threshold 50)
is run through the real rules on a generated corpus of WMT14's statistics (``benchmarks/wmt_corpus.py``)
served through ``mirror:``, at several fractions of its 4.5M pairs. Every rule writes a Snakemake
``benchmark:`` file (seconds, CPU seconds, peak RSS of the job's process tree); binarising the
training data for ``train`` is timed here as a further stage. Then ``report`` fits, per stage, the
exponent b of ``seconds = a * pairs^b`` over the sizes.

    python benchmarks/scale_data_path.py run --fraction 0.01 --work scale/f0.01 --cores 2
    python benchmarks/scale_data_path.py run --fraction 0.1 --work scale/f0.1 --cores 2
    python benchmarks/scale_data_path.py report scale/f0.01 scale/f0.1 [scale/f1] \\
        --output benchmarks/results/scale_data_path

``run`` writes ``<work>/scale_run.json`` (the stages' measurements, the corpus record, the machine,
the commit); ``report`` writes ``scale_data_path.json`` and ``scale_data_path.md``. The newstest sets
come from ``../shared/data`` (linked into the generated mirror); only newstest2014 is mirrored, so the
run keeps the paper config's valid set and that one test set.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))

import wmt_corpus  # noqa: E402

from nmtvariants.inference.defaults import DECODER_CACHE_MB  # noqa: E402

CORPUS = "wmt14_ende"
PAIR = "en-de"
LANGS = ("en", "de")
SPLITS = ("train", "newstest2013", "newstest2014-full")
PAPER_CONFIG = REPO / "experiments" / "emelin2019.yaml"
# Stages whose input is the training corpus; their jobs on the test sets are constant-size and
# reported apart (a fit over train + test jobs would read the constant as sub-linear growth).
WHOLE_CORPUS_RULES = {"download", "clean", "truecase_train", "bpe_learn", "network_vocab"}


def rehearsal_config(mirror: Path) -> dict:
    """The paper config's WMT14 EN-DE corpus, one direction, the mirrored test set, no experiments."""
    paper = yaml.safe_load(PAPER_CONFIG.read_text())
    corpus = dict(paper["corpora"][CORPUS])
    corpus.update(
        source=[CORPUS, "wmt13:en-de", "wmt14/full:en-de"], pairs=[PAIR], testsets=["newstest2014-full"]
    )
    return {"mirror": str(mirror.resolve()), "seed": 1234, "corpora": {CORPUS: corpus}, "experiments": {}}


def link_shared(mirror: Path, shared: Path) -> None:
    """The real mirror's files beside the generated archives (wmt/ is merged entry by entry)."""
    for entry in shared.iterdir():
        if entry.name == "wmt":
            for sub in entry.iterdir():
                link = mirror / "wmt" / sub.name
                if not link.exists():
                    link.symlink_to(sub.resolve())
        elif not (mirror / entry.name).exists():
            (mirror / entry.name).symlink_to(entry.resolve())


def targets() -> list[str]:
    bpe = f"data/{CORPUS}/{PAIR}/bpe"
    return [f"{bpe}/vocab.txt"] + [f"{bpe}/{split}.{lang}" for split in SPLITS for lang in LANGS]


def _train_inputs(rule: str, parts: tuple[str, ...]) -> list[str]:
    """The files a training-corpus job of ``rule`` reads (``parts``: its benchmark path's parts)."""
    pair_dir = f"data/{CORPUS}/{PAIR}"
    lang = parts[-1].rsplit(".", 1)[-1] if "." in parts[-1] else ""
    return {
        "download": [f"data/{CORPUS}/raw/downloads/{name}" for name, _, _ in wmt_corpus.ARCHIVES],
        "tokenize": [f"data/{CORPUS}/raw/train.{lang}"],
        "clean": [f"data/{CORPUS}/tok/train.{side}" for side in LANGS],
        "truecase_train": [f"{pair_dir}/clean/train.{lang}"],
        "truecase_apply": [f"{pair_dir}/clean/train.{lang}"],
        "bpe_learn": [f"{pair_dir}/tc/train.{side}" for side in LANGS],
        "bpe_apply": [f"{pair_dir}/tc/train.{lang}"],
        "network_vocab": [f"{pair_dir}/bpe/train.{side}" for side in LANGS],  # as network_vocab_inputs
        "binarize": [f"{pair_dir}/bpe/train.{side}" for side in LANGS],
    }.get(rule, [])


def input_mb(work: Path, rule: str, parts: tuple[str, ...]) -> float | None:
    """Summed size of a training-corpus job's input files in MiB, as Snakemake's ``input.size_mb``
    (None if unknown or absent)."""
    files = [work / name for name in _train_inputs(rule, parts)]
    if not files or not all(file.exists() for file in files):
        return None
    return sum(file.stat().st_size for file in files) / 2**20


def read_benchmarks(work: Path) -> list[dict]:
    """One record per job: rule, wildcards part of its file name, seconds, CPU seconds, peak RSS MB."""
    jobs = []
    for path in sorted((work / "logs" / "benchmarks").rglob("*.tsv")):
        rule = path.relative_to(work / "logs" / "benchmarks").parts[0]
        with path.open() as handle:
            row = next(csv.DictReader(handle, delimiter="\t"))
        name = path.name
        scope = "train" if rule in WHOLE_CORPUS_RULES or "train." in name else "test sets"
        parts = path.relative_to(work / "logs" / "benchmarks").with_suffix("").parts
        jobs.append(
            dict(
                rule=rule,
                input_mb=input_mb(work, rule, parts) if scope == "train" else None,
                job=str(path.relative_to(work / "logs" / "benchmarks").with_suffix("")),
                scope=scope,
                seconds=float(row["s"]),
                cpu_seconds=float(row.get("cpu_time") or 0.0),
                max_rss_mb=float(row["max_rss"]) if row.get("max_rss") not in (None, "", "-") else None,
            )
        )
    return jobs


# Runs a command in a fresh interpreter and prints its children's rusage: RUSAGE_CHILDREN of this
# process would fold in every earlier child (the Snakemake run's peak RSS into binarize's).
_RUSAGE = (
    "import json, resource, subprocess, sys; subprocess.run(sys.argv[2:], check=True); "
    "u = resource.getrusage(resource.RUSAGE_CHILDREN); "
    "open(sys.argv[1], 'w').write(json.dumps([u.ru_utime + u.ru_stime, u.ru_maxrss]))"
)


def timed(command: list[str], log: Path, cwd: Path) -> dict:
    """Run ``command``; wall seconds, CPU seconds and peak RSS (MB) of it and its children."""
    usage = log.with_suffix(".rusage.json")
    start = time.perf_counter()
    with log.open("w") as handle:
        subprocess.run(
            [sys.executable, "-c", _RUSAGE, str(usage), *command],
            cwd=cwd, stdout=handle, stderr=subprocess.STDOUT, check=True,
        )  # fmt: skip
    cpu, max_rss_kb = json.loads(usage.read_text())
    return dict(seconds=time.perf_counter() - start, cpu_seconds=cpu, max_rss_mb=max_rss_kb / 1024)


def machine() -> str:
    from nmtvariants.hardware import cpu_model

    return f"{os.cpu_count()}-core {cpu_model()}"


def git_commit() -> str:
    out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True)
    return out.stdout.strip()


def measure_binarize(work: Path) -> dict:
    """Time ``nmtvariants binarize`` of the BPE'd training data (what ``train`` does on loading)."""
    bpe = work / "data" / CORPUS / PAIR / "bpe"
    command = [
        "nmtvariants", "binarize", "--src", str(bpe / "train.en"), "--tgt", str(bpe / "train.de"),
        "--vocab", str(bpe / "vocab.txt"), "--output", str(work / "train.npz"),
    ]  # fmt: skip
    measured = timed(command, work / "binarize.log", REPO)
    measured["input_mb"] = input_mb(work, "binarize", ("binarize",))
    return measured


def rebinarize(args: argparse.Namespace) -> None:
    """Measure binarising again in a finished work folder (alone, so nothing else shares the core)."""
    path = args.work / "scale_run.json"
    record = json.loads(path.read_text())
    record["binarize"] = measure_binarize(args.work)
    path.write_text(json.dumps(record, indent=1) + "\n")
    print(json.dumps(record["binarize"]))


def train_settings(work: Path, updates: int, batch_tokens: int, threads: int) -> dict:
    """The paper config's BASE model and schedule, ``updates`` updates of ``batch_tokens`` on CPU,
    reading the binarised training data; no validation (loaded, not run: its cost is not the question)."""
    paper = yaml.safe_load(PAPER_CONFIG.read_text())["experiments"]["emelin2019_ende_base"]
    bpe = work / "data" / CORPUS / PAIR / "bpe"
    train = {key: paper["train"][key] for key in ("warmup",)}
    train.update(
        max_updates=updates, batch_tokens=batch_tokens, save_every=updates, keep_last=1,
        valid_every=updates + 1, log_every=max(1, updates // 10), threads=threads, tensorboard=False,
        seed=1234,
    )  # fmt: skip
    return {
        "data": {
            "train_bin": str(work / "train.npz"), "vocab": str(bpe / "vocab.txt"),
            "valid_src": str(bpe / "newstest2013.en"), "valid_tgt": str(bpe / "newstest2013.de"),
        },
        "model": paper["model"],
        "variant": {},
        "train": train,
    }  # fmt: skip


def train(args: argparse.Namespace) -> None:
    """Start-up time, peak RSS and tokens/s of ``train`` on the full binarised data of ``--work``."""
    settings = train_settings(args.work, args.updates, args.batch_tokens, args.threads)
    outdir = args.work / "train_base"
    command = [
        "nmtvariants", "train", "--config-json", json.dumps(settings), "--outdir", str(outdir),
        "--threads", str(args.threads), "--no-progress",
    ]  # fmt: skip
    started = time.time()
    measured = timed(command, args.work / "train.log", REPO)
    first = (args.work / "train.log").read_text().splitlines()[0]
    logged = time.mktime(time.strptime(first[:19], "%Y-%m-%d %H:%M:%S"))
    with (outdir / "train_log.csv").open() as handle:
        rows = [row for row in csv.DictReader(handle) if row["split"] == "train"]
    measured.update(
        updates=args.updates, batch_tokens=args.batch_tokens, threads=args.threads,
        startup_seconds=logged - started,
        tokens_per_second=sum(float(r["tok_per_s"]) for r in rows[1:]) / max(1, len(rows) - 1),
        model=settings["model"],
    )  # fmt: skip
    path = args.work / "scale_run.json"
    record = json.loads(path.read_text())
    record["train"] = measured
    path.write_text(json.dumps(record, indent=1) + "\n")
    print(json.dumps(measured))


def every_nth_line(path: Path, every: int, output: Path) -> int:
    """Lines 1, 1 + every, 1 + 2 * every, ... of ``path`` into ``output``; how many."""
    lines = path.read_text(encoding="utf-8").splitlines()[::every]
    output.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return len(lines)


def decode(args: argparse.Namespace) -> None:
    """Translate and score newstest2014 (every ``--every``-th sentence) with the BASE model of ``train``.

    The paper config's beam settings and the commands of rules translate, postprocess and evaluate.
    A model of 100 updates rarely ends a hypothesis, so every sentence is decoded to the length limit
    (``max_len_a * source + max_len_b``): the worst case of decoding cost, not a translation."""
    settings = yaml.safe_load(PAPER_CONFIG.read_text())["experiments"]["emelin2019_ende_base"]["evaluate"]
    bpe = args.work / "data" / CORPUS / PAIR / "bpe"
    out = args.work / "decode"
    out.mkdir(exist_ok=True)
    sentences = every_nth_line(bpe / "newstest2014-full.en", args.every, out / "source.en")
    raw = args.work / "data" / CORPUS / "raw"
    every_nth_line(raw / "newstest2014-full.de", args.every, out / "reference.de")
    translate = [
        "nmtvariants", "translate", "--checkpoint", str(args.work / "train_base" / "final.pt"),
        "--vocab", str(bpe / "vocab.txt"), "--input", str(out / "source.en"),
        "--output", str(out / "hyp.bpe"),
        "--beam", str(settings["beam"]), "--alpha", str(settings["alpha"]),
        "--max-len-a", str(settings["max_len_a"]), "--max-len-b", str(settings["max_len_b"]),
        "--dtype", args.dtype, "--threads", str(args.threads), "--cache-mb", str(args.cache_mb),
    ]  # fmt: skip
    postprocess = [
        "nmtvariants", "postprocess", "-l", "de", "--truecased", "-o", str(out / "hyp"), str(out / "hyp.bpe"),
    ]  # fmt: skip
    evaluate = [
        "nmtvariants", "evaluate", "--hyp", str(out / "hyp"), "--ref", str(out / "reference.de"), "-l", "de",
        "--metrics", ",".join(settings["metrics"]), "--system", "base-100-updates",
        "--testset", "newstest2014-full", "--json", str(out / "scores.json"),
    ]  # fmt: skip
    measured = {
        name: timed(command, out / f"{name}.log", REPO)
        for name, command in (("translate", translate), ("postprocess", postprocess), ("evaluate", evaluate))
    }
    source = (out / "source.en").read_text(encoding="utf-8").splitlines()
    source_tokens = [len(line.split()) for line in source]
    record = dict(
        date=time.strftime("%Y-%m-%d"), commit=git_commit(), machine=machine(), every=args.every,
        sentences=sentences, cache_mb=args.cache_mb,
        full_set_sentences=len((bpe / "newstest2014-full.en").read_text().splitlines()),
        source_bpe_tokens=sum(source_tokens), threads=args.threads, dtype=args.dtype,
        settings={key: settings[key] for key in ("beam", "alpha", "max_len_a", "max_len_b")},
        stages=measured,
        scores={"scores": {  # the scores only: the file also names this machine's paths
            metric: {"score": value["score"]}
            for metric, value in json.loads((out / "scores.json").read_text())["scores"].items()
        }},
    )  # fmt: skip
    path = args.work / "scale_run.json"
    run_record = json.loads(path.read_text())
    run_record["decodes"] = [*run_record.get("decodes", []), record]
    path.write_text(json.dumps(run_record, indent=1) + "\n")
    print(json.dumps(record))


def pooled_stage_commands(work: Path, output: Path, processes: int) -> dict[str, list[str]]:
    """The commands of the rules that may run a worker pool (tokenize, truecase apply) and of BPE
    applying, on the English training side of ``work`` (as rules tokenize, truecase_apply, bpe_apply
    run them for the paper config)."""
    pair_dir = work / "data" / CORPUS / PAIR
    tokenize = (
        f"nmtvariants normalize -l en -j {processes} {work}/data/{CORPUS}/raw/train.en"
        f" | nmtvariants tokenize -l en -a -j {processes} -o {output}/tok.en"
    )
    return {
        "tokenize": ["bash", "-o", "pipefail", "-c", tokenize],
        "truecase_apply": [
            "nmtvariants", "truecase", "apply", "--model", str(pair_dir / "truecase" / "model.en"),
            "-j", str(processes), "-o", str(output / "tc.en"), str(pair_dir / "clean" / "train.en"),
        ],
        "bpe_apply": [
            "nmtvariants", "bpe", "apply", "--codes", str(pair_dir / "bpe" / "codes"),
            "--vocab", str(pair_dir / "bpe" / "vocab.en"), "--threshold", "50",
            "-o", str(output / "bpe.en"), str(pair_dir / "tc" / "train.en"),
        ],
    }  # fmt: skip


def processes(args: argparse.Namespace) -> None:
    """The largest single process of each pooled stage (Snakemake's benchmark sums a job's process
    tree, so a pool's workers and its parent are counted together): wall, CPU and the peak RSS of
    the largest process (``RUSAGE_CHILDREN``), on the English training side of ``--work``."""
    output = args.work / "processes"
    output.mkdir(exist_ok=True)
    commands = pooled_stage_commands(args.work, output, args.processes)
    when = dict(date=time.strftime("%Y-%m-%d"), commit=git_commit())
    measured = {
        stage: {**timed(commands[stage], output / f"{stage}.log", REPO), **when}
        for stage in args.stages or commands
    }
    for produced in output.glob("*.en"):
        produced.unlink()
    path = args.work / "scale_run.json"
    record = json.loads(path.read_text())
    earlier = record.get("largest_process") if args.stages else None
    if earlier and earlier["processes"] != args.processes:
        raise SystemExit(
            f"{path}: its stages ran with {earlier['processes']} workers; measure them all again"
        )
    stages = {  # a stage measured before this one carries the record's own date and commit
        stage: {"date": earlier["date"], "commit": earlier["commit"], **values}
        for stage, values in (earlier["stages"] if earlier else {}).items()
    }
    record["largest_process"] = dict(
        **when, machine=machine(), processes=args.processes, stages={**stages, **measured},
    )  # fmt: skip
    path.write_text(json.dumps(record, indent=1) + "\n")
    print(json.dumps(record["largest_process"]))


def collect(args: argparse.Namespace) -> None:
    """Record a run stopped before its end: the jobs it finished (no workflow total, no binarising)."""
    corpus_record = json.loads((args.work / "mirror" / "wmt_corpus.json").read_text())
    record = dict(
        date=time.strftime("%Y-%m-%d"), commit=git_commit(), machine=machine(), cores=args.cores,
        fraction=corpus_record["fraction"], corpus=corpus_record, generate_seconds=None, workflow=None,
        workflow_command="(stopped before its end; the stages it finished)", binarize=None,
        jobs=read_benchmarks(args.work),
    )  # fmt: skip
    (args.work / "scale_run.json").write_text(json.dumps(record, indent=1) + "\n")
    print(f"{len(record['jobs'])} finished jobs recorded")


def run(args: argparse.Namespace) -> None:
    work: Path = args.work
    mirror = work / "mirror"
    work.mkdir(parents=True, exist_ok=True)
    record_path = mirror / "wmt_corpus.json"
    if not record_path.exists():
        start = time.perf_counter()
        wmt_corpus.generate(args.fraction, mirror)
        generated = time.perf_counter() - start
    else:
        generated = None
    corpus_record = json.loads(record_path.read_text())
    link_shared(mirror, args.shared)
    config = work / "config.yaml"
    config.write_text(yaml.safe_dump(rehearsal_config(mirror), sort_keys=False))
    snakemake = [
        sys.executable, str(REPO / "benchmarks" / "snakemake_sampled.py"), "-s", str(REPO / "Snakefile"),
        "-d", str(work), "--configfile", str(config),
        "--cores", str(args.cores), "--scheduler", "greedy", *targets(),
    ]  # fmt: skip
    workflow = timed(snakemake, work / "snakemake.out", REPO)
    binarised = measure_binarize(work)
    record = dict(
        date=time.strftime("%Y-%m-%d"),
        commit=git_commit(),
        machine=machine(),
        cores=args.cores,
        fraction=args.fraction,
        corpus=corpus_record,
        generate_seconds=generated,
        workflow=workflow,
        workflow_command=(
            "python benchmarks/snakemake_sampled.py -s Snakefile -d <work> --configfile <work>/config.yaml"
            f" --cores {args.cores}"
            " --scheduler greedy " + " ".join(targets())
        ),
        binarize=binarised,
        jobs=read_benchmarks(work),
    )
    (work / "scale_run.json").write_text(json.dumps(record, indent=1) + "\n")
    print(json.dumps({k: record[k] for k in ("fraction", "workflow", "binarize")}))


def stage_totals(record: dict) -> dict[str, dict]:
    """Stage -> summed seconds and CPU seconds, largest peak RSS, over the jobs of one run."""
    totals: dict[str, dict] = {}
    for job in record["jobs"]:
        key = job["rule"] if job["scope"] == "train" else f"{job['rule']} (test sets)"
        total = totals.setdefault(key, dict(jobs=0, seconds=0.0, cpu_seconds=0.0, max_rss_mb=0.0))
        total["jobs"] += 1
        total["seconds"] += job["seconds"]
        total["cpu_seconds"] += job["cpu_seconds"]
        total["max_rss_mb"] = max(total["max_rss_mb"], job["max_rss_mb"] or 0.0)
    if record["binarize"]:
        totals["binarize"] = dict(jobs=1, **record["binarize"])
    return totals


def growth_exponent(sizes: list[float], values: list[float]) -> float | None:
    """Least-squares slope of log(value) on log(size): b in value = a * size^b."""
    points = [(math.log(s), math.log(v)) for s, v in zip(sizes, values, strict=True) if v > 0]
    if len(points) < 2:
        return None
    mean_x = sum(x for x, _ in points) / len(points)
    mean_y = sum(y for _, y in points) / len(points)
    spread = sum((x - mean_x) ** 2 for x, _ in points)
    return sum((x - mean_x) * (y - mean_y) for x, y in points) / spread if spread else None


def fit_stages(records: list[dict]) -> dict[str, dict]:
    """Per stage, over its training-corpus jobs at every size: ``seconds = a * MiB^b`` (log-log least
    squares), ``peak RSS MB = c + d * MiB`` (least squares, d >= 0) and the input MiB per pair."""
    points: dict[str, list[tuple[float, float, float, float]]] = {}
    for record in records:
        jobs = [job for job in record["jobs"] if job["scope"] == "train" and job["input_mb"]]
        if record["binarize"]:
            jobs.append(dict(rule="train_data", **record["binarize"]))
        for job in jobs:
            if job.get("input_mb"):
                per_pair = job["input_mb"] / record["corpus"]["pairs"]
                # CPU seconds, not wall: the machine was shared, and a job's CPU time is what a core
                # of its own would take (sampled every 0.1 s: snakemake_sampled.py; runs recorded
                # before 2026-11-27 were sampled every 30 s after 15 s and lost up to 30 s a job)
                seconds = job["cpu_seconds"] or job["seconds"]
                points.setdefault(job["rule"], []).append(
                    (job["input_mb"], seconds, job["max_rss_mb"] or 0.0, per_pair)
                )
    fits = {}
    for stage, values in sorted(points.items()):
        sizes = [v[0] for v in values]
        growing = max(sizes) >= 2 * min(sizes)  # else the input does not grow (the vocabularies)
        b = growth_exponent(sizes, [v[1] for v in values]) if growing else 0.0
        if b is None:
            continue
        c, d = _affine(sizes, [v[2] for v in values]) if growing else (max(v[2] for v in values), 0.0)
        fits[stage] = dict(
            a=_intercept(sizes, [v[1] for v in values], b),
            b=b,
            c=c,
            d=d,
            mb_per_pair=sum(v[3] for v in values) / len(values),
            points=[dict(input_mb=v[0], seconds=v[1], max_rss_mb=v[2]) for v in values],
        )
    return fits


def _affine(sizes: list[float], values: list[float]) -> tuple[float, float]:
    """Least-squares ``value = c + d * size`` with ``d >= 0`` (memory does not shrink with the input)."""
    mean_x, mean_y = sum(sizes) / len(sizes), sum(values) / len(values)
    spread = sum((x - mean_x) ** 2 for x in sizes)
    d = max(0.0, sum((x - mean_x) * (y - mean_y) for x, y in zip(sizes, values, strict=True)) / spread)
    return mean_y - d * mean_x, d


def _intercept(sizes: list[float], values: list[float], slope: float) -> float:
    logs = [math.log(v) - slope * math.log(s) for s, v in zip(sizes, values, strict=True) if v > 0]
    return math.exp(sum(logs) / len(logs))


def report(args: argparse.Namespace) -> None:
    records = []
    for work in args.works:
        record = json.loads((work / "scale_run.json").read_text())
        record["jobs"] = read_benchmarks(work)  # re-read: sizes as the current code measures them
        if record["binarize"]:
            record["binarize"]["input_mb"] = input_mb(work, "binarize", ("binarize",))
        records.append(record)
    records.sort(key=lambda r: r["fraction"])
    sizes = [r["corpus"]["pairs"] for r in records]
    per_run = [stage_totals(r) for r in records]
    stages = sorted({stage for totals in per_run for stage in totals}, key=lambda s: (s.endswith(")"), s))
    rows = []
    for stage in stages:
        present = [
            (size, totals[stage]) for size, totals in zip(sizes, per_run, strict=True) if stage in totals
        ]
        fit_sizes = [size for size, _ in present]
        row = dict(
            stage=stage,
            by_size={str(size): totals for size, totals in present},
            time_exponent=growth_exponent(fit_sizes, [t["seconds"] for _, t in present]),
            cpu_exponent=growth_exponent(fit_sizes, [t["cpu_seconds"] for _, t in present]),
            rss_exponent=growth_exponent(fit_sizes, [t["max_rss_mb"] for _, t in present]),
        )
        rows.append(row)
    result = dict(
        runs=[{k: r.get(k) for k in ("date", "commit", "machine", "cores", "fraction", "corpus", "workflow",
                                     "workflow_command", "generate_seconds", "binarize", "train",
                                     "largest_process", "decodes")}
              for r in records],
        stages=rows,
        fits=fit_stages(records),
    )  # fmt: skip
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.with_suffix(".json").write_text(json.dumps(result, indent=1) + "\n")
    args.output.with_suffix(".md").write_text(markdown(records, sizes, rows))
    for stage, fit in result["fits"].items():  # for src/nmtvariants/scaling/costs.py
        values = ", ".join(f"{key}={fit[key]:.4g}" for key in ("a", "b", "c", "d", "mb_per_pair"))
        print(f'    "{stage}": StageCost({values}),')


def check(args: argparse.Namespace) -> None:
    """The plan's per-stage prediction for ``--work`` (from curves fitted on the ``--fit`` runs only,
    and the workflow's dry run of its config) against what that run measured."""
    from nmtvariants.scaling.cli import dry_run
    from nmtvariants.scaling.costs import StageCost
    from nmtvariants.scaling.plan import parse_dry_run, plan_data_path

    fitted = []
    for work in args.fit:
        record = json.loads((work / "scale_run.json").read_text())
        record["jobs"] = read_benchmarks(work)
        fitted.append(record)
    fits = fit_stages(fitted)
    stages = {
        name: StageCost(**{key: fit[key] for key in ("a", "b", "c", "d", "mb_per_pair")})
        for name, fit in fits.items()
    }
    record = json.loads((args.work / "scale_run.json").read_text())
    jobs = parse_dry_run(dry_run(REPO / "Snakefile", args.work / "config.yaml", targets()))
    predicted = plan_data_path(jobs, {CORPUS: record["corpus"]["pairs"]}, stages)
    measured: dict[str, float] = {}
    wall: dict[str, float] = {}
    for job in read_benchmarks(args.work):
        measured[job["rule"]] = measured.get(job["rule"], 0.0) + (job["cpu_seconds"] or job["seconds"])
        wall[job["rule"]] = wall.get(job["rule"], 0.0) + job["seconds"]
    rows = [
        dict(stage=name, predicted_s=plan.core_seconds, measured_s=measured.get(name), wall_s=wall.get(name),
             error=(plan.core_seconds / measured[name] - 1) if measured.get(name) else None)
        for name, plan in predicted.items()
    ]  # fmt: skip
    result = dict(
        fitted_on=[r["corpus"]["pairs"] for r in fitted], checked=record["corpus"]["pairs"], rows=rows,
        total_predicted_s=sum(r["predicted_s"] for r in rows if r["measured_s"]),
        total_measured_s=sum(r["measured_s"] for r in rows if r["measured_s"]),
    )  # fmt: skip
    args.output.with_suffix(".check.json").write_text(json.dumps(result, indent=1) + "\n")
    lines = [
        "Plan check: curves fitted on "
        + ", ".join(f"{pairs:,}" for pairs in result["fitted_on"])
        + f" pairs only, predicting the {result['checked']:,}-pair run: core-seconds per stage against"
        " the run's CPU seconds (its wall seconds beside them: the machine was shared).",
        "",
        "| stage | predicted core-s | measured CPU s | error | measured wall s |",
        "|---|---:|---:|---:|---:|",
    ]
    for row in rows:
        error = "-" if row["error"] is None else f"{row['error']:+.0%}"
        lines.append(
            f"| {row['stage']} | {row['predicted_s']:,.1f} | {_fmt(row['measured_s'], 1)} | {error}"
            f" | {_fmt(row['wall_s'], 1)} |"
        )
    lines.append(
        f"| all measured | {result['total_predicted_s']:,.1f} | {result['total_measured_s']:,.1f} |"
        f" {result['total_predicted_s'] / result['total_measured_s'] - 1:+.0%} | |"
    )
    args.output.with_suffix(".check.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


def _fmt(value: float | None, digits: int = 2) -> str:
    return "-" if value is None else f"{value:,.{digits}f}"


def markdown(records: list[dict], sizes: list[int], rows: list[dict]) -> str:
    head = " | ".join(f"{size:,} pairs: s / CPU s / peak MB" for size in sizes)
    lines = [
        "# The WMT14 EN-DE data path at 1 to 100% size (benchmarks/scale_data_path.py)",
        "",
        "Stage by stage: wall seconds / CPU seconds / peak RSS (MB) summed over a stage's jobs (peak: the"
        " largest job), and the exponent b of `seconds = a * pairs^b` fitted over the sizes.",
        "",
        f"| stage | {head} | time b | CPU b | RSS b |",
        "|---|" + "---|" * (len(sizes) + 3),
    ]
    for row in rows:
        cells = []
        for size in sizes:
            totals = row["by_size"].get(str(size))
            cells.append(
                "-" if totals is None else
                f"{totals['seconds']:,.1f} / {totals['cpu_seconds']:,.1f} / {totals['max_rss_mb']:,.0f}"
            )  # fmt: skip
        lines.append(
            f"| {row['stage']} | " + " | ".join(cells)
            + f" | {_fmt(row['time_exponent'])} | {_fmt(row['cpu_exponent'])} | {_fmt(row['rss_exponent'])} |"
        )  # fmt: skip
    lines += ["", "Runs:", ""]
    for record in records:
        corpus = record["corpus"]
        workflow = (
            f"Snakemake {record['workflow']['seconds']:,.0f} s wall on {record['cores']} cores"
            if record["workflow"]
            else f"stopped before its end ({record['cores']} cores): the stages it finished"
        )
        lines.append(
            f"- {record['fraction']:g} of WMT14 EN-DE: {corpus['pairs']:,} pairs,"
            f" {corpus['tokens_en']:,} English words; {workflow}"
            f" ({record['date']}, {record['machine']}, commit {record['commit']})"
        )
    commands = [r["workflow_command"] for r in records if r["workflow"]]
    lines += ["", f"Command: `{commands[-1]}` (written by `run`)", ""]
    lines += largest_process_lines(records) + decode_lines(records)
    return "\n".join(lines)


def largest_process_lines(records: list[dict]) -> list[str]:
    """The pooled stages' largest single process per size (``processes``), if measured."""
    measured = [r for r in records if r.get("largest_process")]
    if not measured:
        return []
    stages = list(measured[0]["largest_process"]["stages"])
    lines = [
        "## The largest single process of each pooled stage (`scale_data_path.py processes`)",
        "",
        "The English training side, the rule's command with a pool of"
        f" {measured[0]['largest_process']['processes']} workers; peak RSS of the largest process"
        " (parent or worker, `RUSAGE_CHILDREN`), where the table above sums the process tree.",
        "",
        "| stage | "
        + " | ".join(f"{r['corpus']['pairs']:,} pairs: s / CPU s / largest process MB" for r in measured)
        + " | 100% / 10% |",
        "|---|" + "---|" * (len(measured) + 1),
    ]  # fmt: skip
    for stage in stages:
        cells = [r["largest_process"]["stages"][stage] for r in measured]
        ratio = cells[-1]["max_rss_mb"] / cells[0]["max_rss_mb"] if len(cells) > 1 else None
        lines.append(
            f"| {stage} | "
            + " | ".join(
                f"{c['seconds']:,.0f} / {c['cpu_seconds']:,.0f} / {c['max_rss_mb']:,.0f}" for c in cells
            )
            + f" | {_fmt(ratio)} |"
        )
    by_commit: dict[tuple[str, str], list[str]] = {}
    for record in measured:
        for stage, values in record["largest_process"]["stages"].items():
            key = (values.get("date", record["largest_process"]["date"]),
                   values.get("commit", record["largest_process"]["commit"]))  # fmt: skip
            names = by_commit.setdefault(key, [])
            if stage not in names:
                names.append(stage)
    machine_name = measured[-1]["largest_process"]["machine"]
    when = "; ".join(
        f"{', '.join(names)}: {date}, commit {commit}" for (date, commit), names in by_commit.items()
    )
    return [*lines, "", f"({machine_name}; {when})", ""]


def decode_lines(records: list[dict]) -> list[str]:
    """Translating and scoring newstest2014 with the BASE model (``decode``), each run, if measured."""
    return [
        line for record in records for decode in record.get("decodes", []) for line in _decode(record, decode)
    ]


def _decode(record: dict, decode: dict) -> list[str]:
    stages, settings = decode["stages"], decode["settings"]
    per_sentence = stages["translate"]["cpu_seconds"] / decode["sentences"]
    scores = decode["scores"]["scores"]
    budget = decode.get("cache_mb")
    batches = "batches of 64 sentences" + (
        f" and at most {budget:,.0f} MB of decoder cache" if budget else ""
    )
    which = "Every sentence" if decode["every"] == 1 else f"Every {decode['every']}th sentence"
    threads = f"{decode['threads']} thread" + ("s" if decode["threads"] > 1 else "")
    cpu_hours = per_sentence * decode["full_set_sentences"] / 3600
    whole = (
        f"the whole set took {cpu_hours:.1f} CPU hours"
        if decode["sentences"] == decode["full_set_sentences"]
        else f"so the whole set would take {cpu_hours:.1f} CPU hours at this length"
    )
    lines = [
        "## Translating and scoring newstest2014 with the BASE model (`scale_data_path.py decode`)",
        "",
        f"{which} of newstest2014 ({decode['sentences']:,} of"
        f" {decode['full_set_sentences']:,}; {decode['source_bpe_tokens']:,} source BPE tokens),"
        f" the model of `train` ({record['train']['updates']} updates), beam {settings['beam']},"
        f" alpha {settings['alpha']}, length limit {settings['max_len_a']} x source +"
        f" {settings['max_len_b']}, {decode['dtype']}, {threads}, {batches}; the"
        " commands of rules translate, postprocess and evaluate.",
        "",
        "| command | s | CPU s | peak RSS MB |",
        "|---|---:|---:|---:|",
    ]
    for name, measured in stages.items():
        lines.append(
            f"| {name} | {measured['seconds']:,.1f} | {measured['cpu_seconds']:,.1f}"
            f" | {measured['max_rss_mb']:,.0f} |"
        )
    return [
        *lines,
        "",
        f"Translation: {per_sentence:.2f} CPU s a sentence, {whole}."
        f" BLEU {scores['bleu']['score']:.2f}, chrF {scores['chrf']['score']:.2f} (a model of"
        f" {record['train']['updates']} updates on a generated corpus; the scores show that the"
        f" chain runs, not a translation). ({decode['date']}, {decode['machine']}, commit"
        f" {decode['commit']})",
        "",
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    run_parser = commands.add_parser(
        "run", help="generate, run the data path, binarise; <work>/scale_run.json"
    )
    run_parser.add_argument("--fraction", type=float, required=True)
    run_parser.add_argument("--work", type=Path, required=True)
    run_parser.add_argument("--cores", type=int, default=2)
    run_parser.add_argument("--shared", type=Path, default=REPO.parent / "shared" / "data")
    run_parser.set_defaults(func=run)
    binarize_parser = commands.add_parser("binarize", help="measure binarising again in a finished <work>")
    binarize_parser.add_argument("--work", type=Path, required=True)
    binarize_parser.set_defaults(func=rebinarize)
    train_parser = commands.add_parser("train", help="BASE-model updates on the binarised data of <work>")
    train_parser.add_argument("--work", type=Path, required=True)
    train_parser.add_argument("--updates", type=int, default=100)
    train_parser.add_argument("--batch-tokens", type=int, default=3072, help="the paper config's per GPU")
    train_parser.add_argument("--threads", type=int, default=2)
    train_parser.set_defaults(func=train)
    decode_parser = commands.add_parser("decode", help="translate + score newstest2014 with the BASE model")
    decode_parser.add_argument("--work", type=Path, required=True)
    decode_parser.add_argument("--every", type=int, default=1, help="decode every N-th sentence (1: all)")
    decode_parser.add_argument("--threads", type=int, default=1)
    decode_parser.add_argument("--dtype", default="float32")
    decode_parser.add_argument("--cache-mb", type=float, default=DECODER_CACHE_MB, help="translate's budget")
    decode_parser.set_defaults(func=decode)
    processes_parser = commands.add_parser(
        "processes", help="the largest single process of each pooled stage (English training side)"
    )
    processes_parser.add_argument("--work", type=Path, required=True)
    processes_parser.add_argument("--processes", type=int, default=2, help="the pool's workers (rules: 2)")
    processes_parser.add_argument(
        "--stages", nargs="+", choices=("tokenize", "truecase_apply", "bpe_apply"),
        help="measure these again, keep the others' figures (default: all)",
    )  # fmt: skip
    processes_parser.set_defaults(func=processes)
    collect_parser = commands.add_parser("collect", help="record the finished jobs of a run stopped early")
    collect_parser.add_argument("--work", type=Path, required=True)
    collect_parser.add_argument("--cores", type=int, default=2)
    collect_parser.set_defaults(func=collect)
    check_parser = commands.add_parser(
        "check", help="the plan's prediction for a run against its measurement"
    )
    check_parser.add_argument("--work", type=Path, required=True, help="the run to predict")
    check_parser.add_argument("--fit", type=Path, nargs="+", required=True, help="runs to fit the curves on")
    check_parser.add_argument("--output", type=Path, default=REPO / "benchmarks/results/scale_data_path")
    check_parser.set_defaults(func=check)
    report_parser = commands.add_parser("report", help="stages side by side and their growth exponents")
    report_parser.add_argument("works", type=Path, nargs="+")
    report_parser.add_argument("--output", type=Path, default=REPO / "benchmarks/results/scale_data_path")
    report_parser.set_defaults(func=report)
    args = parser.parse_args()
    args.func(args)


if __name__ == "__main__":
    main()
