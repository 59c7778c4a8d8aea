"""Rerun policy: what Snakemake re-runs after an edit, on a copy of the real workflow.

The policy (docs/cluster.md): all of Snakemake's rerun triggers stay on (mtime, params, input,
software-env, code), and the rules are written so that they fire only for meaningful changes:
- rules run the library through `shell:` (`nmtvariants ...`); the library is an imported package,
  so editing a module or a docstring is not a code change of any rule and re-runs nothing;
- every parameter a job depends on reaches it through `params:` holding only that job's slice of
  the config, so changing it re-runs exactly that job (and what consumes its outputs); training and
  decoding settings also name their folders (models/runs/<run id>/decode/<decode id>/), so a
  changed setting is a new run or decoding, trained once and shared by identical experiments;
- a table rule depends only on its input files, so naming a table whose inputs exist runs only the
  aggregation.

Each test copies Snakefile, rules/, schemas/, envs/ and the package into a temporary directory,
materialises every output with `snakemake --touch --forceall` (real metadata records: params, code,
input set, software env -- the same records a real run leaves) and asks Snakemake what it would run.
Where the command is cheap the test runs it for real.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from workflow_configs import write_config

REPO = Path(__file__).resolve().parents[1]
TINY = {
    "toyworld": {"seed": 7, "sizes": {"train": 10, "valid": 2, "test": 2}, "image_size": 16},
    # merged into config.yaml's experiment: a second variant (another run: identical settings would
    # share one), to show that one run's change trains that run only
    "experiments": {"baseline": {"variants": {"baseline": {}, "second": {"warmup": 150}}}},
}
TRAINED = {"train", "average", "translate", "postprocess", "evaluate", "scores_table", "report"}
# (config key path, new value, rules whose params changed, rule -> jobs that must re-run; None: every
# job downstream of the change). A training setting names its run folder (models/runs/<run id>/),
# so a changed setting is a new run to train (missing output), never a retrained old one; decoding
# settings name the decode folder inside the run. Extend as stages land.
PARAM_CASES = [
    pytest.param(("toyworld", "sizes", "train"), 12, {"toyworld"}, None, marks=pytest.mark.slow),
    (
        ("experiments", "baseline", "train", "max_updates"),
        601,
        set(),
        {"train": 2, "average": 2, "translate": 2, "postprocess": 2, "evaluate": 2, "scores_table": 1},
    ),
    (
        ("experiments", "baseline", "variants", "second"),
        {"warmup": 300},
        set(),
        {"train": 1, "average": 1, "translate": 1, "postprocess": 1, "evaluate": 1, "scores_table": 1},
    ),
    (
        ("experiments", "baseline", "average_last"),
        2,
        set(),
        {"average": 2, "translate": 2, "postprocess": 2, "evaluate": 2, "scores_table": 1},
    ),
    (
        ("experiments", "baseline", "evaluate", "beam"),
        4,
        set(),
        {"translate": 2, "postprocess": 2, "evaluate": 2, "scores_table": 1},
    ),
]
DIRECTORY_OUTPUTS = """
import json, sys
from pathlib import Path
from snakemake.api import SnakemakeApi
from snakemake.settings.types import ConfigSettings, OutputSettings, ResourceSettings, StorageSettings
with SnakemakeApi(OutputSettings()) as api:
    workflow = api.workflow(
        resource_settings=ResourceSettings(cores=1),
        config_settings=ConfigSettings(configfiles=[Path(sys.argv[1])]),
        storage_settings=StorageSettings(),
        snakefile=Path("Snakefile"),
        workdir=Path("."),
    )
    rules = workflow._workflow.rules
    print(json.dumps([o.regex().pattern for r in rules for o in r.output if o.is_directory]))
"""


class WorkflowCopy:
    """The repository's workflow and package in a temporary directory, driven by snakemake."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.config = json.loads(json.dumps(TINY))

    @classmethod
    def from_repo(cls, root: Path) -> WorkflowCopy:
        for name in ("Snakefile", "config.yaml"):
            shutil.copy2(REPO / name, root / name)
        for name in ("rules", "schemas", "envs", "workflow", "workflow_scripts"):
            if (REPO / name).is_dir():
                shutil.copytree(REPO / name, root / name, ignore=shutil.ignore_patterns("__pycache__"))
        shutil.copytree(REPO / "src", root / "src", ignore=shutil.ignore_patterns("__pycache__"))
        copy = cls(root)
        copy.write_config()
        return copy

    def clone(self, root: Path) -> WorkflowCopy:
        """A copy with the same files, mtimes and metadata records (copytree keeps mtimes)."""
        shutil.copytree(self.root, root, symlinks=True, dirs_exist_ok=True)
        return WorkflowCopy(root)

    def write_config(self) -> None:
        write_config(self.root / "tiny.yaml", self.config)

    def run(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        env = dict(os.environ)
        env["PYTHONPATH"] = str(self.root / "src")
        env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env["PATH"]])
        result = subprocess.run(
            [sys.executable, "-m", "snakemake", "--configfile", "tiny.yaml", *args],
            cwd=self.root,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        if check:
            assert result.returncode == 0, result.stdout + result.stderr
        return result

    def materialise(self) -> None:
        """Create every planned output (empty) and record metadata as a real run would."""
        env = dict(os.environ, PYTHONPATH=str(self.root / "src"))
        patterns = json.loads(
            subprocess.run(
                [sys.executable, "-c", DIRECTORY_OUTPUTS, "tiny.yaml"],
                cwd=self.root,
                env=env,
                capture_output=True,
                text=True,
                check=True,
            )
            .stdout.strip()
            .splitlines()[-1]
        )
        summary = self.run("--summary").stdout.splitlines()
        header = next(i for i, line in enumerate(summary) if line.startswith("output_file\t"))
        for row in summary[header + 1 :]:
            name = row.split("\t")[0]
            path = self.root / name
            if any(re.match(pattern, name) for pattern in patterns):
                path.mkdir(parents=True, exist_ok=True)
            else:
                path.parent.mkdir(parents=True, exist_ok=True)
                path.touch()
        self.run("--touch", "--forceall", "--cores", "1")

    def planned(self, *targets: str) -> dict[str, list[str]]:
        """Rule -> the dry run's `reason:` of each job it would execute (empty: nothing to do)."""
        output = self.run("-n", "--cores", "1", *targets).stdout
        jobs: dict[str, list[str]] = {}
        current = None
        for line in output.splitlines():
            started = re.match(r"^(?:local)?rule (\w+):", line)
            if started:
                current = started.group(1)
                jobs.setdefault(current, [])
            elif current and line.strip().startswith("reason:"):
                jobs[current].append(line.strip())
        return jobs


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> WorkflowCopy:
    copy = WorkflowCopy.from_repo(tmp_path_factory.mktemp("template"))
    copy.materialise()
    return copy


@pytest.fixture
def workflow(template: WorkflowCopy, tmp_path: Path) -> WorkflowCopy:
    return template.clone(tmp_path / "wf")


def test_naming_a_table_runs_only_its_aggregation(workflow):
    for name in ("data_statistics.md", "data_statistics.csv"):
        (workflow.root / "results" / "tables" / name).unlink()
    assert set(workflow.planned("results/tables/data_statistics.md")) == {"data_statistics"}
    assert set(workflow.planned()) == {"data_statistics", "report", "all"}
    result = workflow.run("--cores", "1", "results/tables/data_statistics.md")
    ran = re.findall(r"^(?:local)?rule (\w+):", result.stdout + result.stderr, re.M)
    assert ran == ["data_statistics"]
    table = (workflow.root / "results" / "tables" / "data_statistics.csv").read_text(encoding="utf-8")
    assert table.startswith("corpus,split,language,sentences,tokens,types")
    assert set(workflow.planned()) == {"report", "all"}  # the report is the only consumer left


def test_editing_package_code_or_a_docstring_reruns_nothing(workflow):
    module = workflow.root / "src" / "nmtvariants" / "reporting" / "data_statistics.py"
    text = module.read_text(encoding="utf-8")
    edited = text.replace('"""Corpus statistics', '"""Edited docstring. Corpus statistics', 1)
    assert edited != text
    module.write_text(edited, encoding="utf-8")
    unrelated = workflow.root / "src" / "nmtvariants" / "fileio.py"
    unrelated.write_text(
        unrelated.read_text(encoding="utf-8") + "\n\ndef new_helper() -> int:\n    return 1\n",
        encoding="utf-8",
    )
    assert workflow.planned() == {}


def test_editing_a_rules_command_is_seen_as_a_code_change(workflow):
    """Control for the test above: the code trigger is live, it just never sees the package."""
    rules = workflow.root / "rules" / "tables.smk"
    text = rules.read_text(encoding="utf-8")
    command = '"nmtvariants data-stats {input.texts:q}'
    assert command in text
    rules.write_text(text.replace(command, command + " --verbose"), encoding="utf-8")
    planned = workflow.planned()
    assert set(planned) == {"data_statistics", "report", "all"}
    assert planned["data_statistics"][0].startswith("reason: Code has changed since last execution")


@pytest.mark.parametrize(("key", "value", "params_changed", "reruns"), PARAM_CASES)
def test_changing_a_parameter_reruns_exactly_the_affected_jobs(workflow, key, value, params_changed, reruns):
    node = workflow.config  # the overrides written into tiny.yaml
    for part in key[:-1]:
        node = node.setdefault(part, {})
    node[key[-1]] = value
    workflow.write_config()
    planned = workflow.planned()
    by_params = {
        rule
        for rule, reasons in planned.items()
        if any("Params have changed since last execution" in reason for reason in reasons)
    }
    assert by_params == params_changed
    if params_changed <= {"train", "translate"}:  # a run or decoding setting: a new folder
        for reason in planned.get("train", []) + planned.get("translate", []):
            assert reason.startswith("reason: Missing output files"), reason
    if reruns is None:
        assert "train" in planned and "evaluate" in planned  # everything downstream
    else:
        counts = {rule: len(reasons) for rule, reasons in planned.items()}
        assert counts == {**reruns, "report": 1, "all": 1}


@pytest.mark.slow
def test_snakemake_html_report_collects_the_tables_and_the_report(workflow):
    """`snakemake --report` builds offline from the report() outputs and their captions."""
    workflow.run("--report", "report.html")
    html = (workflow.root / "report.html").read_text(encoding="utf-8")
    for name in ("data_statistics.md", "report.md", "Tables", "Report"):
        assert name in html, name
    assert "sacreBLEU signature, config hash, git commit" in html  # workflow/report/workflow.rst


def test_linking_a_corpus_input_per_pair_leaves_what_was_built_from_it_current(workflow):
    """The per-pair image features are links to the corpus's one extraction. Snakemake touches every
    finished job's outputs; through a hard link that touch reached the corpus file and made the
    deranged index built from it out of date, so `make demo` left work behind (CI, 2026-11-25).
    Built here in the order that showed it: the derangement first, the pair's link last."""
    features = workflow.root / "data" / "toyworld" / "features"
    for path in features.glob("test.resnet.*"):
        path.unlink()
    # the scenes and their list for real, not the empty files of the template
    (workflow.root / "data" / "toyworld" / "image_splits" / "test.txt").unlink()
    link = "data/toyworld/en-de/inputs/test.resnet.npy"
    deranged = "data/toyworld/en-de/adversarial/test.image.seed1.index"
    for name in (link, deranged):
        (workflow.root / name).unlink()
    workflow.run("--cores", "1", deranged)
    before = (features / "test.resnet.npy").stat().st_mtime_ns
    workflow.run("--cores", "1", link)
    assert (features / "test.resnet.npy").stat().st_mtime_ns == before
    assert (workflow.root / link).resolve() == (features / "test.resnet.npy").resolve()
    assert workflow.planned(link, deranged) == {}
