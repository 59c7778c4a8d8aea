"""One measurement, two commits, one window: an A/B harness for every speed claim.

A benchmark run alone says little on a shared 2-core machine: another process, a warmer cache or a
different script version moves it by 10%. This harness runs the *same* command for two sides (two
commits of the library, or two commits of the benchmark script with the library pinned), interleaved
round by round in one window (A B, B A, A B, ...), and reports the ratio B / A of each round: noise
that lasts longer than one round hits both sides of that round alike and cancels in its ratio.

Each side is a detached git worktree of its commit. ``--pin PATH=COMMIT`` checks PATH out of one commit
into every side's tree, so only what should differ differs: ``--pin benchmarks=HEAD`` measures two
library versions with one script version; ``--pin src=<commit>`` measures two script versions on one
library. The command is a template run by bash in the side's tree: ``{tree}`` is that tree and
``{json}`` a fresh file the command writes its result to, ``{repo}`` the repository the commits come
from (for paths beside it, such as ``{repo}/../shared``; all quoted by the harness); ``--metric``
names the number to compare, as a dotted path into that JSON (``rounds.0.ours.train_tok_per_s``), or
``--pattern`` a regular expression whose first group, at its last match in the command's output, is
the number (for a script that prints its result and writes no JSON).

Example (do two training-benchmark script versions measure the same library alike?)::

    python benchmarks/ab.py --side old=b211700 --side new=HEAD --pin src=b211700 --rounds 4 \\
        --pattern 'round 1 ours: ([0-9.]+) tok/s' --out benchmarks/results/ab_train_script \\
        -- 'NMTV_PEERS={repo}/../shared/peers python {tree}/benchmarks/train_throughput.py \
            --only-ours --rounds 1'

Every round also records the load average and the CPU time other processes used during each run
(machine-wide busy time from /proc/stat minus the command's own), so a disturbed round is visible.
Writes ``<out>.json`` and ``<out>.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def git(*args: str, cwd: Path) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


def busy_seconds() -> float | None:
    """Machine-wide CPU seconds spent not idle since boot (/proc/stat), or None off Linux."""
    try:
        fields = [int(v) for v in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    except OSError:
        return None
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
    return (sum(fields[:8]) - idle) / os.sysconf("SC_CLK_TCK")


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def lookup(record: object, path: str) -> float:
    """The number at a dotted path (list indices as numbers) of a JSON record."""
    for key in path.split("."):
        record = record[int(key)] if isinstance(record, list) else record[key]  # type: ignore[index]
    return float(record)  # type: ignore[arg-type]


def make_tree(repo: Path, root: Path, name: str, commit: str, pins: dict[str, str]) -> dict[str, str]:
    """A detached worktree of ``commit`` with each pinned path checked out of its own commit."""
    tree = root / name
    git("worktree", "add", "--detach", "--force", str(tree), commit, cwd=repo)
    for path, pin in pins.items():
        subprocess.run(["git", "rm", "-r", "-q", "--cached", "--ignore-unmatch", path], cwd=tree, check=True)
        subprocess.run(["rm", "-rf", path], cwd=tree, check=True)
        git("checkout", pin, "--", path, cwd=tree)
    return {"name": name, "commit": git("rev-parse", commit, cwd=repo), "tree": str(tree)}


def run_once(
    side: dict[str, str], template: str, metric: str | re.Pattern, scratch: Path, index: int, repo: Path
) -> dict:
    """One run of the command on one side: its metric, wall and CPU time, and what else ran."""
    result_file = scratch / f"{side['name']}-{index}.json"
    places = {"{tree}": side["tree"], "{json}": str(result_file), "{repo}": str(repo.resolve())}
    command = template
    for placeholder, path in places.items():
        command = command.replace(placeholder, shlex.quote(path))
    env = {**os.environ, "PYTHONPATH": os.path.join(side["tree"], "src")}
    load_before, busy_before, cpu_before = os.getloadavg()[0], busy_seconds(), children_cpu()
    start = time.perf_counter()
    done = subprocess.run(["bash", "-c", command], cwd=side["tree"], env=env, capture_output=True, text=True)
    wall = time.perf_counter() - start
    own_cpu = children_cpu() - cpu_before
    if done.returncode != 0:
        sys.exit(f"{side['name']} ({side['commit'][:9]}): the command failed:\n{done.stderr[-2000:]}")
    busy_after = busy_seconds()
    other = None
    if busy_before is not None and busy_after is not None:
        other = max(0.0, (busy_after - busy_before - own_cpu) / wall)
    if isinstance(metric, re.Pattern):
        found = metric.findall(done.stdout + done.stderr)
        if not found:
            sys.exit(f"{side['name']}: no match of {metric.pattern!r} in the command's output")
        value = float(found[-1])
    else:
        value = lookup(json.loads(result_file.read_text(encoding="utf-8")), metric)
    return {
        "value": value,
        "wall_s": wall,
        "cpu_s": own_cpu,
        "load_before": load_before,
        "other_cores": other,
    }


def summarise(rounds: list[dict], names: tuple[str, str]) -> dict:
    a, b = names
    ratios = [r[b]["value"] / r[a]["value"] for r in rounds]
    return {
        "ratio_median": statistics.median(ratios),
        "ratio_min": min(ratios),
        "ratio_max": max(ratios),
        "ratio_sd": statistics.stdev(ratios) if len(ratios) > 1 else None,
        a: statistics.median(r[a]["value"] for r in rounds),
        b: statistics.median(r[b]["value"] for r in rounds),
    }


def markdown(record: dict) -> str:
    a, b = (side["name"] for side in record["sides"])
    s = record["summary"]
    lines = [
        f"# A/B: {b} / {a} ({record['date']})",
        "",
        f"Command ({record['rounds_run']} rounds, order alternating): `{record['command']}`",
        f"Metric: `{record['metric']}`. Machine: {record['machine']}.",
        "Sides: "
        + "; ".join(f"{x['name']} = {x['commit'][:9]}" for x in record["sides"])
        + (
            "; pinned: " + ", ".join(f"{p} = {c[:9]}" for p, c in record["pins"].items())
            if record["pins"]
            else ""
        ),
        "",
        f"| round | order | {a} | {b} | {b} / {a} | other cores ({a} / {b}) | load before |",
        "|---:|---|---:|---:|---:|---|---:|",
    ]
    for k, r in enumerate(record["rounds"], 1):
        other = " / ".join(
            "n/a" if r[n]["other_cores"] is None else f"{r[n]['other_cores']:.2f}" for n in (a, b)
        )
        lines.append(
            f"| {k} | {' '.join(r['order'])} | {r[a]['value']:.4g} | {r[b]['value']:.4g} "
            f"| {r[b]['value'] / r[a]['value']:.3f} | {other} | {r[a]['load_before']:.2f} |"
        )
    sd = "" if s["ratio_sd"] is None else f", sd {s['ratio_sd']:.3f}"
    lines += [
        "",
        f"**{b} / {a}: {s['ratio_median']:.3f}** (median of the rounds; {s['ratio_min']:.3f}-"
        f"{s['ratio_max']:.3f}{sd}). Medians: {a} {s[a]:.4g}, {b} {s[b]:.4g}.",
        "",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--side", action="append", required=True, help="NAME=COMMIT, twice (A first)")
    parser.add_argument("--pin", action="append", default=[], help="PATH=COMMIT checked out in both trees")
    parser.add_argument("--rounds", type=int, default=4)
    what = parser.add_mutually_exclusive_group(required=True)
    what.add_argument("--metric", help="dotted path of the number in the JSON the command writes to {json}")
    what.add_argument("--pattern", help="regular expression whose first group in the output is the number")
    parser.add_argument("--out", required=True, help="output prefix: <out>.json and <out>.md")
    parser.add_argument("--repo", type=Path, default=REPO, help="the git repository of the commits")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- then the command template")
    args = parser.parse_args(argv)
    from nmtvariants.hardware import cpu_model

    template = " ".join(word for word in args.command if word != "--").strip()
    if len(args.side) != 2 or not template:
        parser.error("give two --side NAME=COMMIT and a command after --")
    sides_wanted = [tuple(item.split("=", 1)) for item in args.side]
    pins = {
        path: git("rev-parse", commit, cwd=args.repo)
        for path, commit in (item.split("=", 1) for item in args.pin)
    }
    names = (sides_wanted[0][0], sides_wanted[1][0])
    metric = re.compile(args.pattern) if args.pattern else args.metric
    with tempfile.TemporaryDirectory(prefix="nmtv-ab-") as tmp:
        root = Path(tmp)
        sides = [make_tree(args.repo, root, name, commit, pins) for name, commit in sides_wanted]
        try:
            rounds = []
            for index in range(args.rounds):
                order = list(names) if index % 2 == 0 else list(reversed(names))
                record = {"order": order}
                for name in order:
                    side = next(s for s in sides if s["name"] == name)
                    record[name] = run_once(side, template, metric, root, index, args.repo)
                    print(
                        f"round {index + 1} {name}: {record[name]['value']:.4g}", file=sys.stderr, flush=True
                    )
                rounds.append(record)
        finally:
            for side in sides:
                git("worktree", "remove", "--force", side["tree"], cwd=args.repo)
    result = {
        "date": time.strftime("%Y-%m-%d", time.gmtime()),
        "command": template,
        "metric": args.pattern or args.metric,
        "machine": f"{cpu_model()}, {os.cpu_count()} cores",
        "sides": [{k: v for k, v in side.items() if k != "tree"} for side in sides],
        "pins": pins,
        "rounds_run": len(rounds),
        "rounds": rounds,
        "summary": summarise(rounds, names),
    }
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".json").write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    out.with_suffix(".md").write_text(markdown(result), encoding="utf-8")
    print(markdown(result))


if __name__ == "__main__":
    main()
