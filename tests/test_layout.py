"""The layout of runs and models has one home (nmtvariants.layout): the rules and the study plans build
their paths from it, so none can drift from the rules that write what it reads. The study modules also
take their sub-word files from it (a derived corpus moves them); the data chain's rules spell their own
output patterns (data/<corpus>/<pair>/bpe/...), being the writers."""

from __future__ import annotations

import re
from pathlib import Path

from nmtvariants.layout import averaged_model, bpe_file, bpe_folder, decoded_bpe, final_model, train_log

REPO = Path(__file__).resolve().parents[1]
# the layout's own spellings: a run folder, an averaged model, a decoding; in the package, a BPE folder too
RUN_LAYOUT = re.compile(r"models/runs/\{|averaged-last\{|/decode/\{")
BPE_LAYOUT = re.compile(r"/bpe/\{|/bpe/vocab\.txt|derived/\{")


def test_paths_of_a_run_and_of_its_sub_word_files():
    assert final_model("ab12") == "models/runs/ab12/final.pt"
    assert averaged_model("ab12", 3) == "models/runs/ab12/averaged-last3.pt"
    assert averaged_model("{run}", "{last}") == "models/runs/{run}/averaged-last{last}.pt"  # a pattern
    assert decoded_bpe("ab12", "cd34", "test") == "models/runs/ab12/decode/cd34/test.bpe.hyp"
    assert train_log("ab12") == "models/runs/ab12/train_log.csv"
    assert bpe_file("toyworld", "en-de", "vocab.txt") == "data/toyworld/en-de/bpe/vocab.txt"
    assert (
        bpe_folder("toyworld", "en-de", {"derived": "multitask"}) == "data/toyworld/en-de/derived/multitask"
    )
    assert (
        bpe_file("toyworld", "en-de", "train.en", {"aux": ["parents_x2"]})
        == "data/toyworld/en-de/bpe/train.en"
    )


def test_no_rule_or_study_module_spells_the_layout_itself():
    sources = [
        *(REPO / "src" / "nmtvariants").rglob("*.py"),
        REPO / "Snakefile",
        *(REPO / "rules").rglob("*.smk"),
    ]
    spelt = [
        f"{path.relative_to(REPO)}:{number}"
        for path in sources
        if path.name != "layout.py"
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1)
        if not line.lstrip().startswith("#")
        and (RUN_LAYOUT.search(line) or (path.suffix == ".py" and BPE_LAYOUT.search(line)))
    ]
    assert spelt == []
