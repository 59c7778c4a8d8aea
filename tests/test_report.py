"""results/report.md: tables, figures and their provenance, from files the real stages wrote.

The score files come from running `nmtvariants evaluate` from a copy of this package committed in a
scratch git repository (so that each score file has a known commit of its own, different from the
commit that writes the report); the tables come from `nmtvariants scores-table`. Every expectation
is computed independently: signatures with sacreBLEU itself, commits with git, digests with
coreutils' sha256sum.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest
import sacrebleu
import torch

from nmtvariants.cli import main
from nmtvariants.config import training_runs, with_defaults
from nmtvariants.errors import InputError
from nmtvariants.provenance import code_provenance, git_state
from nmtvariants.reporting.figures import layer_figure, save_png
from nmtvariants.reporting.report import (
    build_report,
    config_hash,
    git_commit,
    manifest_entries,
)
from nmtvariants.training.checkpoints import load_checkpoint, save_checkpoint
from nmtvariants.training.cli import write_run_summary

REPO = Path(__file__).resolve().parents[1]
CONFIG = {
    "seed": 1,
    "toyworld": {"seed": 7, "sizes": {"train": 10, "valid": 2, "test": 2}},
    "corpora": {
        "toyworld": {
            "source": "toyworld",
            "pairs": ["en-de"],
            "testsets": ["test"],
            "preprocess": {"bpe": {"merges": 100}},
        }
    },
    "experiments": {
        "toy": {
            "study": "baseline",
            "corpus": "toyworld",
            "pairs": ["en-de"],
            "model": {"preset": "tiny"},
            "variants": {"baseline": {}},
            "train": {"max_updates": 5},
            "evaluate": {"testsets": ["test"]},
        }
    },
}


def resolved_config() -> dict:
    """CONFIG as the workflow hands it to the report: schema defaults filled in."""
    return with_defaults(CONFIG, REPO / "schemas" / "config.schema.yaml")


def run_folder() -> str:
    """The shared run folder the workflow gives toy/en-de/baseline: models/runs/<content id>."""
    (run_id,) = training_runs(resolved_config())
    return f"runs/{run_id}"


HYPS = ["Die Katze sitzt auf der Matte.", "Ein Hund läuft im Park.", "Zwei Männer spielen Fußball."]
REFS = ["Die Katze saß auf der Matte.", "Ein Hund rennt im Park.", "Zwei Männer spielen Fußball."]


def git(repo: Path, *args: str) -> str:
    env = dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@t", GIT_COMMITTER_NAME="t")
    env["GIT_COMMITTER_EMAIL"] = "t@t"
    return subprocess.run(
        ["git", "-C", str(repo), *args], env=env, capture_output=True, text=True, check=True
    ).stdout.strip()


def commit_all(repo: Path, message: str) -> str:
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", message)
    return git(repo, "rev-parse", "HEAD")


def nmtvariants(code: Path, commands: list[list[str]], cwd: Path) -> None:
    """Run CLI commands from the package copy in ``code`` (its own checkout, hence its own commit),
    all in one Python process (the CLI takes seconds to start)."""
    script = (
        "import sys\nfrom nmtvariants.cli import main\n"
        f"for argv in {commands!r}:\n    assert main(argv) == 0, argv\n"
    )
    env = dict(os.environ, PYTHONPATH=str(code / "src"), OMP_NUM_THREADS="1")
    result = subprocess.run([sys.executable, "-c", script], cwd=cwd, env=env, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


def evaluate(system: str, *extra: str) -> list[str]:
    """The `evaluate` command that scores ``system`` into results/<system>/test.scores.json."""
    return [
        *("evaluate", "--hyp", "hyp.de", "--ref", "ref.de", "-l", "de", "--metrics", "bleu,chrf"),
        *("--system", system, "--testset", "test", "--json", f"results/{system}/test.scores.json", *extra),
    ]


def sacrebleu_signatures(tokenize: str | None = None) -> dict[str, str]:
    """BLEU and chrF signatures computed with sacreBLEU directly."""
    bleu = sacrebleu.metrics.BLEU(tokenize=tokenize)
    bleu.corpus_score(HYPS, [REFS])
    chrf = sacrebleu.metrics.CHRF()
    chrf.corpus_score(HYPS, [REFS])
    return {"BLEU": str(bleu.get_signature()), "chrF": str(chrf.get_signature())}


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> SimpleNamespace:
    """A finished toy run, made by the real stages.

    ``code`` is a committed copy of this package: commit A scores the baseline, commit B (one
    more edit) scores the shortcuts variant and, with another tokenizer, a third system. Tables:
    ``agree`` (baseline, from A), ``mixed`` (baseline from A + shortcuts from B), ``disagree``
    (13a and intl tokenizers), plus a table written without inputs. The report is written from a
    different checkout (``root``), at yet another commit.
    """
    root = tmp_path_factory.mktemp("run")
    code = tmp_path_factory.mktemp("code")
    shutil.copytree(
        REPO / "src" / "nmtvariants",
        code / "src" / "nmtvariants",
        ignore=shutil.ignore_patterns("__pycache__"),
    )
    git(code, "init", "-q")
    commit_a = commit_all(code, "A")
    (root / "hyp.de").write_text("\n".join(HYPS) + "\n", encoding="utf-8")
    (root / "ref.de").write_text("\n".join(REFS) + "\n", encoding="utf-8")
    nmtvariants(code, [evaluate("toy/en-de/baseline")], cwd=root)
    with open(code / "src" / "nmtvariants" / "__init__.py", "a", encoding="utf-8") as handle:
        handle.write("# a later commit\n")
    commit_b = commit_all(code, "B")
    scores = {
        system: f"results/toy/en-de/{system}/test.scores.json" for system in ("baseline", "shortcuts", "intl")
    }
    tables = {"agree": ["baseline"], "mixed": ["baseline", "shortcuts"], "disagree": ["shortcuts", "intl"]}
    commands = [evaluate("toy/en-de/shortcuts"), evaluate("toy/en-de/intl", "--tokenize", "intl")]
    commands += [
        ["scores-table", *(scores[s] for s in systems), "--title", f"{name}: translation quality",
         "--out", f"results/tables/toy/{name}.md"]
        for name, systems in tables.items()
    ]  # fmt: skip
    commands.append(["data-stats", "hyp.de", "--out", "results/tables/stats.md"])
    nmtvariants(code, commands, cwd=root)
    figures = root / "results" / "figures" / "toy"
    figures.mkdir(parents=True)
    pd.DataFrame(
        {"layer": [1, 2, 1, 2], "value": [0.5, 0.7, 0.6, 0.8], "variant": ["a", "a", "b", "b"]}
    ).to_csv(figures / "probe.csv", index=False)
    save_png(layer_figure(figures / "probe.csv"), figures / "probe.png")
    run = root / "models" / run_folder()
    run.mkdir(parents=True)
    result = SimpleNamespace(update=5, stop_reason="max_updates", best=None, last_valid=None)
    write_run_summary(run, result)
    corpus = root / "data" / "multi30k"
    (corpus / "raw").mkdir(parents=True)
    files = {f"raw/train.{lang}": f"line {lang}\n" for lang in ("en", "de", "fr")}
    for name, text in files.items():
        (corpus / name).write_text(text, encoding="utf-8")
    manifest = {
        "files": [{"path": n, "sha256": hashlib.sha256(t.encode()).hexdigest()} for n, t in files.items()]
    }
    (corpus / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    (root / "data" / "other").mkdir()
    (root / "data" / "other" / "SHA256SUMS").write_text(f"{'0' * 64}  valid.en\n", encoding="utf-8")
    (root / "README").write_text("x\n", encoding="utf-8")
    git(root, "init", "-q")
    commit_all(root, "report checkout")
    return SimpleNamespace(root=root, code=code, commit_a=commit_a, commit_b=commit_b)


def report_of(run: SimpleNamespace) -> str:
    return build_report(
        results_dir=run.root / "results",
        data_dir=run.root / "data",
        config=resolved_config(),
        repo=run.root,
        models_dir=run.root / "models",
    )


def section(text: str, title: str) -> str:
    """The lines of one ``## title`` section of the report."""
    start = text.index(f"## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end >= 0 else len(text)]


def test_score_files_record_the_commit_of_the_code_that_computed_them(run_dir):
    for system, commit in (("baseline", run_dir.commit_a), ("shortcuts", run_dir.commit_b)):
        record = json.loads((run_dir.root / f"results/toy/en-de/{system}/test.scores.json").read_text())
        assert record["provenance"] == {"commit": commit, "dirty": False}
    signatures = sacrebleu_signatures()
    record = json.loads((run_dir.root / "results/toy/en-de/baseline/test.scores.json").read_text())
    assert record["scores"]["bleu"]["signature"] == signatures["BLEU"]


def test_dirty_checkout_is_flagged_and_missing_git_is_unknown(run_dir, tmp_path):
    code = tmp_path / "code"
    shutil.copytree(run_dir.code, code)
    with open(code / "src" / "nmtvariants" / "__init__.py", "a", encoding="utf-8") as handle:
        handle.write("# uncommitted\n")
    nmtvariants(code, [evaluate("toy/en-de/dirty")], cwd=run_dir.root)
    out = run_dir.root / "results/toy/en-de/dirty/test.scores.json"
    provenance = json.loads(out.read_text())["provenance"]
    assert provenance == {"commit": run_dir.commit_b, "dirty": True}
    shutil.rmtree(out.parent)
    probe = "from nmtvariants.provenance import code_provenance; print(code_provenance())"
    no_git = subprocess.run(
        [sys.executable, "-c", probe],
        env={"PYTHONPATH": str(code / "src"), "PATH": str(tmp_path / "nowhere")},
        capture_output=True,
        text=True,
    )
    assert no_git.returncode == 0, no_git.stderr
    assert no_git.stdout.strip() == "{'commit': 'unknown', 'dirty': None}"
    installed = tmp_path / "site-packages"
    shutil.copytree(code / "src" / "nmtvariants", installed / "nmtvariants")  # not a checkout of its own
    copy = subprocess.run(
        [sys.executable, "-c", probe],
        env=dict(os.environ, PYTHONPATH=str(installed)),
        capture_output=True,
        text=True,
    )
    assert copy.stdout.strip() == "{'commit': 'unknown', 'dirty': None}", copy.stderr


def test_run_json_and_checkpoints_record_the_commit(run_dir, tmp_path):
    expected = git_state(REPO)
    assert code_provenance() == expected
    run = json.loads((run_dir.root / "models" / run_folder() / "run.json").read_text())
    assert run["provenance"] == expected and run["updates"] == 5
    state = {"model": {"w": torch.ones(2)}, "update": 3}
    save_checkpoint(state, tmp_path / "checkpoint_3.pt")
    loaded = load_checkpoint(tmp_path / "checkpoint_3.pt")
    assert loaded["provenance"] == expected and loaded["update"] == 3
    assert "provenance" not in state  # the caller's dict is left alone


def test_report_shows_the_signatures_that_evaluate_wrote(run_dir):
    text = report_of(run_dir)
    signatures = sacrebleu_signatures()
    agree = section(text, "agree: translation quality")
    assert f"  - BLEU: `{signatures['BLEU']}`" in agree
    assert f"  - chrF: `{signatures['chrF']}`" in agree
    assert "none (no scores" not in agree and "disagree" not in agree
    assert "- sacreBLEU signature: none (no scores in this table)" in section(text, "Data statistics")
    scores = section(text, "Scores and their signatures")
    baseline = "results/toy/en-de/baseline/test.scores.json"
    record = json.loads((run_dir.root / baseline).read_text())
    row = (
        f"| {baseline} | toy/en-de/baseline | test | BLEU | {record['scores']['bleu']['score']} | "
        f"`{signatures['BLEU']}` | `{run_dir.commit_a}` |"
    )
    assert row in scores.splitlines()


def test_signature_disagreement_across_rows_is_stated(run_dir):
    text = report_of(run_dir)
    intl = sacrebleu_signatures("intl")["BLEU"]
    assert intl != sacrebleu_signatures()["BLEU"]
    disagree = section(text, "disagree: translation quality")
    assert "  - BLEU: **signatures disagree across rows**" in disagree
    assert (
        f"    - `{sacrebleu_signatures()['BLEU']}`: results/toy/en-de/shortcuts/test.scores.json" in disagree
    )
    assert f"    - `{intl}`: results/toy/en-de/intl/test.scores.json" in disagree
    assert f"  - chrF: `{sacrebleu_signatures()['chrF']}`" in disagree  # chrF has no tokenizer: it agrees
    notes = (run_dir.root / "results/tables/toy/disagree.md").read_text(encoding="utf-8")
    assert "- BLEU: **signatures disagree across rows**" in notes


def test_each_table_shows_its_own_commits_not_the_report_commit(run_dir):
    text = report_of(run_dir)
    report_head = git(run_dir.root, "rev-parse", "HEAD")
    assert f"report written by commit `{report_head}`" in text
    agree = section(text, "agree: translation quality")
    assert f"- computed by commit `{run_dir.commit_a}` (from 1 input file)" in agree
    assert f"- table assembled by commit `{run_dir.commit_b}`" in agree
    assert report_head not in agree
    mixed = section(text, "mixed: translation quality")
    assert "- **rows come from different commits**:" in mixed
    assert f"  - `{run_dir.commit_a}`: results/toy/en-de/baseline/test.scores.json" in mixed
    assert f"  - `{run_dir.commit_b}`: results/toy/en-de/shortcuts/test.scores.json" in mixed
    stats = section(text, "Data statistics")
    assert f"- computed by commit `{run_dir.commit_b}` (the job that wrote the table)" in stats
    trained = describe_commit(code_provenance())
    assert f"- models trained by commit `{trained}`" in agree
    runs = [
        line for line in section(text, "Training runs").splitlines() if line.startswith(f"| {run_folder()} |")
    ]
    assert len(runs) == 1 and runs[0].startswith(f"| {run_folder()} | 5 | max_updates | ")
    assert runs[0].endswith(f" | `{trained}` |")
    hardware = section(text, "Hardware").splitlines()
    trained_on = next(line for line in hardware if line.startswith(f"- models/{run_folder()}/run.json: "))
    assert f"torch {torch.__version__}" in trained_on and f"({os.cpu_count()} cores)" in trained_on


def describe_commit(state: dict) -> str:
    return state["commit"] + ("+dirty" if state["dirty"] else "")


def test_figures_are_listed_with_relative_links_and_their_commit(run_dir):
    text = report_of(run_dir)
    figure = section(text, "Figure: probe")
    assert "![probe](figures/toy/probe.png)" in figure
    assert "data [figures/toy/probe.csv](figures/toy/probe.csv)" in figure
    assert f"drawn by commit `{describe_commit(code_provenance())}`" in figure
    assert "](tables/toy/agree.md)" in text


def test_one_digest_per_corpus_and_the_full_manifest_beside_the_report(run_dir):
    out = run_dir.root / "results" / "report.md"
    assert main(["report", "--config-json", json.dumps(CONFIG), "--results", str(run_dir.root / "results"),
                 "--data", str(run_dir.root / "data"), "--models", str(run_dir.root / "models"),
                 "--repo", str(run_dir.root), "--out", str(out)]) == 0  # fmt: skip
    text = out.read_text(encoding="utf-8")
    manifest = json.loads((out.parent / "data_manifest.json").read_text(encoding="utf-8"))
    corpus = run_dir.root / "data" / "multi30k"
    # independent: coreutils' sha256sum over the files on disk, sorted by name, then hashed
    listing = subprocess.run(
        ["sha256sum", "raw/train.de", "raw/train.en", "raw/train.fr"],
        cwd=corpus,
        capture_output=True,
        text=True,
    ).stdout
    digest = hashlib.sha256(listing.encode()).hexdigest()
    assert manifest["corpora"]["multi30k"]["digest"] == digest
    assert manifest["corpora"]["multi30k"]["files"] == {
        line.split("  ")[1]: line.split("  ")[0] for line in listing.splitlines()
    }
    other = hashlib.sha256(f"{'0' * 64}  valid.en\n".encode()).hexdigest()
    checksums = section(text, "Data checksums")
    assert f"| multi30k | 3 | `{digest}` |" in checksums
    assert f"| other | 1 | `{other}` |" in checksums
    assert "[data_manifest.json](data_manifest.json)" in checksums
    assert hashlib.sha256(b"line en\n").hexdigest() not in text  # per-file sums stay in the manifest
    assert not list(out.parent.glob(".*.tmp"))


def test_config_hash_is_sha256_of_canonical_json_and_ignores_key_order():
    expected = hashlib.sha256(
        b'{"seed":1,"toyworld":{"seed":7,"sizes":{"test":2,"train":10,"valid":2}}}'
    ).hexdigest()[:12]
    config = {"seed": 1, "toyworld": {"seed": 7, "sizes": {"train": 10, "valid": 2, "test": 2}}}
    assert config_hash(config) == expected
    reordered = {"toyworld": {"sizes": {"valid": 2, "train": 10, "test": 2}, "seed": 7}, "seed": 1}
    assert config_hash(reordered) == expected
    assert config_hash({**config, "seed": 2}) != expected


def test_git_commit_matches_git_and_marks_local_edits(tmp_path):
    (tmp_path / "README").write_text("x\n", encoding="utf-8")
    git(tmp_path, "init", "-q")
    head = commit_all(tmp_path, "init")
    assert git_commit(tmp_path) == head
    (tmp_path / "README").write_text("edited\n", encoding="utf-8")
    assert git_commit(tmp_path) == head + "+dirty"
    assert git_commit(Path("/")).startswith("unknown")


def test_manifest_errors_name_the_file_and_line(tmp_path):
    bad = tmp_path / "SHA256SUMS"
    bad.write_text(f"{'a' * 64}  ok.txt\nnot-a-digest file\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"SHA256SUMS:2: expected"):
        manifest_entries(bad)
    broken = tmp_path / "manifest.json"
    broken.write_text('{"a": ', encoding="utf-8")
    with pytest.raises(InputError, match=r"manifest.json:1: invalid JSON"):
        manifest_entries(broken)


def test_cli_bad_config_is_one_line(capsys):
    assert main(["report", "--config-json", "[1"]) == 2
    assert capsys.readouterr().err.startswith("nmtvariants report: error:")
