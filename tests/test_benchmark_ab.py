"""benchmarks/ab.py measures one command on two commits, interleaved round by round, and reports the
ratio of each round; a pinned path is the same in both trees. Checked on a tiny git repository whose
two commits hold known "speeds", so the expected ratios are known exactly."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from benchmark_loader import load_benchmark

REPO = Path(__file__).resolve().parents[1]
ab = load_benchmark("ab")

COMMAND = (
    f"{sys.executable} -c 'import json, sys; "
    'json.dump({"r": [{"v": float(open("speed.txt").read())}]}, open(sys.argv[1], "w"))\' {json}'
)


def commit(repo: Path, speed: int) -> str:
    (repo / "speed.txt").write_text(f"{speed}\n", encoding="utf-8")
    subprocess.run(["git", "add", "speed.txt"], cwd=repo, check=True)
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", str(speed)],
        cwd=repo,
        check=True,
    )
    return subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=repo, check=True, capture_output=True, text=True
    ).stdout.strip()


def repository(tmp_path: Path) -> tuple[Path, str, str]:
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    return repo, commit(repo, 100), commit(repo, 150)


def test_each_round_gives_the_ratio_of_the_two_commits_in_alternating_order(tmp_path):
    repo, slow, fast = repository(tmp_path)
    out = tmp_path / "results" / "ab"
    sides = ["--side", f"a={slow}", "--side", f"b={fast}"]
    ab.main(
        ["--repo", str(repo), *sides, "--rounds", "3", "--metric", "r.0.v", "--out", str(out), "--", COMMAND]
    )
    record = json.loads(out.with_suffix(".json").read_text(encoding="utf-8"))
    assert [r["order"] for r in record["rounds"]] == [["a", "b"], ["b", "a"], ["a", "b"]]
    assert [(r["a"]["value"], r["b"]["value"]) for r in record["rounds"]] == [(100.0, 150.0)] * 3
    assert record["summary"]["ratio_median"] == 1.5 and record["summary"]["ratio_sd"] == 0
    assert [s["commit"] for s in record["sides"]] == [slow, fast]
    assert "**b / a: 1.500**" in out.with_suffix(".md").read_text(encoding="utf-8")
    worktrees = subprocess.run(["git", "worktree", "list"], cwd=repo, capture_output=True, text=True)
    assert len(worktrees.stdout.splitlines()) == 1  # the trees are removed again


def test_a_pinned_path_is_taken_from_one_commit_on_both_sides(tmp_path):
    repo, slow, fast = repository(tmp_path)
    out = tmp_path / "ab"
    sides = ["--side", f"a={slow}", "--side", f"b={fast}", "--pin", f"speed.txt={slow}"]
    ab.main(
        ["--repo", str(repo), *sides, "--rounds", "2", "--metric", "r.0.v", "--out", str(out), "--", COMMAND]
    )
    record = json.loads(out.with_suffix(".json").read_text(encoding="utf-8"))
    assert record["summary"]["ratio_median"] == 1.0 and record["pins"] == {"speed.txt": slow}


def test_the_number_can_be_read_from_the_commands_output(tmp_path):
    repo, slow, fast = repository(tmp_path)
    out = tmp_path / "ab"
    sides = ["--side", f"a={slow}", "--side", f"b={fast}", "--rounds", "2"]
    printing = "echo warm-up 1 tok/s >&2; echo round 1: $(cat speed.txt) tok/s >&2"
    ab.main(
        [
            "--repo",
            str(repo),
            *sides,
            "--pattern",
            r"round 1: ([0-9.]+) tok/s",
            "--out",
            str(out),
            "--",
            printing,
        ]
    )
    record = json.loads(out.with_suffix(".json").read_text(encoding="utf-8"))
    assert [(r["a"]["value"], r["b"]["value"]) for r in record["rounds"]] == [(100.0, 150.0)] * 2
