"""`preprocess.truecase` on the real workflow: `false` means no truecasing, and rule postprocess undoes
exactly the stages that ran (detruecasing only when truecasing ran).

Each setting runs Snakemake once in a temporary copy of the repository (toyworld, a few dozen pairs,
en-de) up to the de test set's BPE file, its round trip and the post-processed hypothesis of the
baseline experiment. The hypothesis is written by hand in the decoder's place (``--allowed-rules``
keeps training out): BPE-segmented lines whose sentences start in lower case, so that detruecasing
shows. The expected post-processed text is computed here with sacremoses alone (de-BPE, then
``MosesDetruecaser`` when the corpus truecases, then ``MosesDetokenizer``), independently of
`nmtvariants.text.postprocess`. Before the fix, `truecase: false` still truecased the tc/ files,
the round trip blamed the truecase stage for every line whose first word is lower-cased there,
and a perfect system's output scored against the raw reference lost those capitals.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from sacremoses import MosesDetokenizer, MosesDetruecaser
from toy_workflow import REPO, run_snakemake, toy_config, workflow_copy

from nmtvariants.config import content_id, decode_settings, training_runs, with_defaults

CORPUS = "data/toyworld"
PAIR = f"{CORPUS}/en-de"
EXPERIMENT_HYP = "results/baseline/en-de/baseline/test.hyp"
ROUNDTRIP = "results/toyworld/en-de/roundtrip/test.de.json"
# Decoder output as BPE pieces: sentence starts in lower case (also after a mid-line full stop and
# behind an opening quote, where detruecase.perl delays the start), a lower-case word mid-sentence.
HYPOTHESIS = [
    "der Hun@@ d läuft .",
    "ein Ball fällt . die Tas@@ se steht neben dem ro@@ ten Ei .",
    '" eine Lampe " steht hier : der Ring !',
    "Der Würfel hat die Flasche umgestoßen , weil das kleine Kaninchen über dem Tisch ist .",
]
PREPROCESSING_RULES = (
    "toyworld",
    "tokenize",
    "clean",
    "clean_shared",
    "truecase_train",
    "truecase_apply",
    "bpe_learn",
    "bpe_vocab_shared",
    "bpe_apply",
    "roundtrip",
    "postprocess",
)


def sacremoses_postprocess(line: str, detruecase: bool) -> str:
    """subword-nmt's ``sed 's/@@ //g'``, detruecase.perl (when truecasing ran), detokenizer.perl."""
    words = re.sub(r"@@( |$)", "", line).split()
    if detruecase:
        words = MosesDetruecaser().detruecase(" ".join(words))
    return MosesDetokenizer("de").detokenize(words)


def hypothesis_path(root: Path, config: dict) -> Path:
    """Where the baseline experiment's decoder writes the test set (its run and decode ids)."""
    resolved = with_defaults(config, REPO / "schemas" / "config.schema.yaml")
    (run_id,) = training_runs(resolved)
    decode = content_id(decode_settings(resolved, "baseline"))
    return root / "models" / "runs" / run_id / "decode" / decode / "test.bpe.hyp"


# ~15 s of Snakemake per setting on 2 busy cores: the regression (false) runs by default, true with -m slow
@pytest.fixture(
    scope="module",
    params=[False, pytest.param(True, marks=pytest.mark.slow)],
    ids=["truecase-false", "truecase-true"],
)
def run(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, bool]:
    truecase = request.param
    root = tmp_path_factory.mktemp(f"truecase-{truecase}")
    config = toy_config()
    config["toyworld"]["sizes"] = {"train": 60, "valid": 4, "test": 10}
    config["corpora"]["toyworld"]["preprocess"]["truecase"] = truecase
    config["corpora"]["toyworld"]["preprocess"]["bpe"]["merges"] = 60
    workflow_copy(root, config)
    hypothesis = hypothesis_path(root, config)
    hypothesis.parent.mkdir(parents=True)
    hypothesis.write_text("".join(f"{line}\n" for line in HYPOTHESIS), encoding="utf-8")
    targets = [f"{PAIR}/tc/train.de", f"{PAIR}/bpe/test.de", ROUNDTRIP, EXPERIMENT_HYP]
    result = run_snakemake(root, *targets, "--allowed-rules", *PREPROCESSING_RULES, timeout=300)
    assert result.returncode == 0, result.stderr[-5000:]
    return root, truecase


def lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines()


def test_tc_files_are_the_tokenised_text_exactly_when_truecase_is_false(run: tuple[Path, bool]) -> None:
    root, truecase = run
    pairs = [
        (f"{CORPUS}/tok/test.de", f"{PAIR}/tc/test.de"),
        (f"{PAIR}/clean/train.de", f"{PAIR}/tc/train.de"),
    ]
    for before, after in pairs:
        unchanged = lines(root / before) == lines(root / after)
        # toyworld sentences all start with a capital that the truecaser lower-cases ("Der" -> "der")
        assert unchanged is not truecase, (before, after)
    assert (root / PAIR / "truecase" / "model.de").is_file() is truecase


def test_roundtrip_reports_no_truecasing_loss(run: tuple[Path, bool]) -> None:
    root, truecase = run
    report = json.loads((root / ROUNDTRIP).read_text(encoding="utf-8"))
    assert report["settings"]["detruecase"] is truecase
    assert report["lines"] == 10
    for comparison in ("inverse", "end_to_end"):
        assert "truecase" not in report[comparison]["stages"], report[comparison]
        assert report[comparison]["identical"] == report["lines"], report[comparison]["examples"]


def test_postprocess_undoes_exactly_the_stages_that_ran(run: tuple[Path, bool]) -> None:
    root, truecase = run
    output = lines(root / EXPERIMENT_HYP)
    assert output == [sacremoses_postprocess(line, detruecase=truecase) for line in HYPOTHESIS]
    # the two settings really differ on these lines: the setting is not a no-op in either direction
    assert output != [sacremoses_postprocess(line, detruecase=not truecase) for line in HYPOTHESIS]


def test_a_perfect_system_matches_the_raw_reference(run: tuple[Path, bool]) -> None:
    """What evaluate compares: the post-processed output with the raw reference. A system that
    outputs the BPE test file itself loses nothing, whichever the setting."""
    root, truecase = run
    segmented = lines(root / PAIR / "bpe" / "test.de")
    raw = lines(root / CORPUS / "raw" / "test.de")
    assert [sacremoses_postprocess(line, detruecase=truecase) for line in segmented] == raw
