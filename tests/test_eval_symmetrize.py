"""grow-diag-final(-and) against a grid transcription of fast_align's atools and hand-worked cases."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from nmtvariants.cli import main
from nmtvariants.errors import InputError
from nmtvariants.evaluation.symmetrize import symmetrize, symmetrize_files
from nmtvariants.fileio import read_lines, write_lines


def naive_atools(fwd: set, rev: set, method: str) -> set:
    """fast_align atools' RefineCommand on a boolean grid, written out with plain lists."""
    width = max([i for i, _ in fwd | rev] + [-1]) + 1
    height = max([j for _, j in fwd | rev] + [-1]) + 1
    res = [[False] * height for _ in range(width)]
    i_al, j_al = [False] * width, [False] * height

    def safe(i: int, j: int) -> bool:
        return 0 <= i < width and 0 <= j < height and res[i][j]

    def align(i: int, j: int) -> None:
        res[i][j] = True
        i_al[i] = True
        j_al[j] = True

    for i in range(width):
        for j in range(height):
            if (i, j) in fwd and (i, j) in rev:
                align(i, j)
    neighbours = [(1, 0), (-1, 0), (0, 1), (0, -1), (1, 1), (-1, 1), (1, -1), (-1, -1)]
    p = sorted((i, j) for i in range(width) for j in range(height) if (i, j) in fwd | rev and not res[i][j])
    keep_going = bool(p)
    while keep_going:
        keep_going = False
        added = []
        for i, j in p:
            if not (i_al[i] and j_al[j]) and any(safe(i + a, j + b) for a, b in neighbours):
                align(i, j)
                added.append((i, j))
                keep_going = True
        p = [x for x in p if x not in added]
    if method == "grow-diag":
        return {(i, j) for i in range(width) for j in range(height) if res[i][j]}
    for directional in (fwd, rev):
        for i in range(width):
            for j in range(height):
                if (i, j) in directional and not res[i][j]:
                    ok = (
                        (not i_al[i] and not j_al[j])
                        if method == "grow-diag-final-and"
                        else not (i_al[i] and j_al[j])
                    )
                    if ok:
                        align(i, j)
    return {(i, j) for i in range(width) for j in range(height) if res[i][j]}


@pytest.mark.parametrize("method", ["grow-diag", "grow-diag-final", "grow-diag-final-and"])
def test_random_directional_alignments_match_atools_transcription(method: str) -> None:
    rng = random.Random(5)
    for _ in range(400):
        n, m = rng.randint(1, 8), rng.randint(1, 8)
        fwd = {(rng.randrange(n), j) for j in range(m) if rng.random() < 0.85}
        rev = {(i, rng.randrange(m)) for i in range(n) if rng.random() < 0.85}
        assert symmetrize(fwd, rev, method) == naive_atools(fwd, rev, method), (fwd, rev)


def test_hand_example_diagonal_growth_and_final_and() -> None:
    # src: 0 1 2 3, tgt: 0 1 2 3. Intersection (0,0) (2,2). Union adds (1,1) (diagonal neighbour of
    # both, src 1 unaligned) and (3,2) (neighbour of (2,2), src 3 unaligned). (0,3) only in fwd and not
    # adjacent: final-and adds it only if src 0 and tgt 3 are both unaligned -> src 0 is aligned -> no;
    # final (or) adds it because tgt 3 is unaligned.
    fwd = {(0, 0), (1, 1), (2, 2), (0, 3)}
    rev = {(0, 0), (2, 2), (3, 2)}
    assert symmetrize(fwd, rev, "intersect") == {(0, 0), (2, 2)}
    assert symmetrize(fwd, rev, "union") == fwd | rev
    assert symmetrize(fwd, rev, "grow-diag") == {(0, 0), (1, 1), (2, 2), (3, 2)}
    assert symmetrize(fwd, rev, "grow-diag-final-and") == {(0, 0), (1, 1), (2, 2), (3, 2)}
    assert symmetrize(fwd, rev, "grow-diag-final") == {(0, 0), (1, 1), (2, 2), (3, 2), (0, 3)}


def test_hand_example_final_and_adds_isolated_links() -> None:
    # (4,5) is in fwd only, far from everything, and neither word is aligned -> final-and keeps it
    fwd = {(0, 0), (4, 5)}
    rev = {(0, 0)}
    assert symmetrize(fwd, rev, "grow-diag") == {(0, 0)}
    assert symmetrize(fwd, rev, "grow-diag-final-and") == {(0, 0), (4, 5)}


def test_hand_example_where_scan_order_matters() -> None:
    # atools scans candidate links in (i, j) order each pass: (0,2) grows from (0,3); then (1,1)
    # grows diagonally from (0,2); (1,4) from (0,3); next pass (0,0) from (1,1); (0,1) is blocked
    # because both its words are now aligned. Koehn's textbook loop (growing outwards from each
    # aligned point) would pick (0,1) instead of (1,1); we follow atools, the tool eflomal replaces.
    fwd = {(0, 0), (0, 1), (0, 2), (0, 3), (1, 4)}
    rev = {(0, 3), (1, 1)}
    assert symmetrize(fwd, rev) == {(0, 0), (0, 2), (0, 3), (1, 1), (1, 4)}


def test_files_and_cli(tmp_path: Path) -> None:
    write_lines(tmp_path / "fwd", ["0-0 1-1 2-2 0-3", "0-0 4-5", ""])
    write_lines(tmp_path / "rev", ["0-0 2-2 3-2", "0-0", "0-0"])
    assert symmetrize_files(tmp_path / "fwd", tmp_path / "rev", tmp_path / "out") == 3
    assert list(read_lines(tmp_path / "out")) == ["0-0 1-1 2-2 3-2", "0-0 4-5", "0-0"]
    code = main(
        [
            "symmetrize",
            "--fwd",
            str(tmp_path / "fwd"),
            "--rev",
            str(tmp_path / "rev"),
            "-o",
            str(tmp_path / "cli"),
            "--method",
            "grow-diag-final",
        ]
    )
    assert code == 0
    assert next(iter(read_lines(tmp_path / "cli"))) == "0-0 0-3 1-1 2-2 3-2"
    write_lines(tmp_path / "short", ["0-0"])
    with pytest.raises(InputError, match=r"1 lines but .*fwd has 3"):
        symmetrize_files(tmp_path / "fwd", tmp_path / "short", tmp_path / "x")


def test_eflomal_output_symmetrises(tmp_path: Path) -> None:
    """Real eflomal forward/reverse output (both source-target) goes through unchanged in format."""
    import shutil
    import subprocess
    import sys

    rng = random.Random(2)
    src, tgt = [], []
    for _ in range(300):
        words = [rng.randrange(30) for _ in range(rng.randint(3, 8))]
        src.append(" ".join(f"s{w}" for w in words))
        tgt.append(" ".join(f"t{w}" for w in words))
    write_lines(tmp_path / "src", src)
    write_lines(tmp_path / "tgt", tgt)
    exe = shutil.which("eflomal-align") or str(Path(sys.executable).parent / "eflomal-align")
    subprocess.run(
        [
            exe,
            "-s",
            str(tmp_path / "src"),
            "-t",
            str(tmp_path / "tgt"),
            "-f",
            str(tmp_path / "f"),
            "-r",
            str(tmp_path / "r"),
            "--overwrite",
        ],
        check=True,
        capture_output=True,
    )
    symmetrize_files(tmp_path / "f", tmp_path / "r", tmp_path / "gdfa")
    lines = list(read_lines(tmp_path / "gdfa"))
    assert len(lines) == 300
    gold = [{(k, k) for k in range(len(s.split()))} for s in src]
    found = [{tuple(map(int, link.split("-"))) for link in line.split()} for line in lines]
    correct = sum(len(f & g) for f, g in zip(found, gold, strict=True))
    assert correct / sum(len(g) for g in gold) > 0.9
