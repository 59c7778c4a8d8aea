"""benchmarks/toy_world_stats.py: lengths and constructions of a toy world, against a count by hand."""

from __future__ import annotations

import pytest
from benchmark_loader import load_benchmark

from nmtvariants.syntax.conllu import parse_conllu

bench = load_benchmark("toy_world_stats")

# "The dog that Tom sees runs ." (a relative clause: "sees" (5) modifies "dog" (2), 3 tokens apart)
# and "Tom runs ." (nothing at a distance); 7 and 3 tokens.
CONLLU = """\
1\tThe\tthe\tDET\t_\t_\t2\tdet\t_\t_
2\tdog\tdog\tNOUN\t_\t_\t6\tnsubj\t_\t_
3\tthat\tthat\tPRON\t_\t_\t5\tobj\t_\t_
4\tTom\tTom\tPROPN\t_\t_\t5\tnsubj\t_\t_
5\tsees\tsee\tVERB\t_\t_\t2\tacl:relcl\t_\t_
6\truns\trun\tVERB\t_\t_\t0\troot\t_\t_
7\t.\t.\tPUNCT\t_\t_\t6\tpunct\t_\t_

1\tTom\tTom\tPROPN\t_\t_\t2\tnsubj\t_\t_
2\truns\trun\tVERB\t_\t_\t0\troot\t_\t_
3\t.\t.\tPUNCT\t_\t_\t2\tpunct\t_\t_

"""


def test_counts_match_a_count_by_hand():
    stats = bench.split_stats(list(parse_conllu(CONLLU.splitlines())))
    assert stats["sentences"] == 2 and stats["max_tokens"] == 7
    assert stats["mean_tokens"] == pytest.approx(5.0)
    assert stats["share_long"] == 0.0
    assert stats["share_with"]["acl:relcl"] == 0.5 and stats["share_with"]["nmod"] == 0.0
    assert stats["relcl_distance"] == pytest.approx(3.0)  # |5 - 2|


def test_a_world_without_relative_clauses_has_no_distance():
    stats = bench.split_stats(list(parse_conllu(CONLLU.split("\n\n")[1].splitlines())))
    assert stats["relcl_distance"] is None and stats["share_with"]["acl:relcl"] == 0.0
