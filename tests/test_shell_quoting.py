"""Values from the config, wildcards and file names reach `shell:` commands as single quoted
arguments (issue 14, item 5): a hostile `mirror` is passed through intact and never executed,
paths with spaces work, and names that become file names are narrowed by the schema."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest
import yaml
from workflow_configs import REPO, default_config_with, dry_run_jobs, snakemake

from nmtvariants.config import check_config
from nmtvariants.errors import ConfigError

SCHEMA = REPO / "schemas" / "config.schema.yaml"
HOSTILE = [
    "m; touch pwned #",
    "$(touch pwned) x",
    "`touch pwned`",
    'it\'s "quoted" && touch pwned',
    "a folder with spaces",
]
# newstest2013 en-de: a small catalogued corpus that the offline mirror (../shared/data) holds
NEWSTEST = {
    "source": "wmt13:en-de",
    "pairs": ["en-de"],
    "train": "newstest2013",
    "valid": "newstest2013",
    "testsets": ["newstest2013"],
    "preprocess": {"bpe": {"merges": 100}},
}


def newstest_config(path: Path, mirror: str | None) -> Path:
    config = {"mirror": mirror, "seed": 1, "corpora": {"nt13": NEWSTEST}}
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    return path


def download_command(*args: str) -> str:
    result = snakemake("data/nt13/raw/newstest2013.en", "-n", "-p", "--forceall", *args)
    assert result.returncode == 0, result.stdout + result.stderr
    (job,) = [job for job in dry_run_jobs(result.stdout) if job["rule"] == "download_nt13"]
    return job["shell"]


@pytest.mark.parametrize("mirror", HOSTILE)
def test_a_hostile_mirror_is_one_quoted_argument(tmp_path, mirror):
    command = download_command("--configfile", str(newstest_config(tmp_path / "c.yaml", mirror)))
    words = shlex.split(command)
    assert words[words.index("--mirror") + 1] == mirror
    assert words[: words.index("--mirror")] == [
        *("export", "NMTV_FORKSERVER=off;"),  # a measured job (`benchmark:`) runs its own command
        "nmtvariants",
        "download",
        "wmt13:en-de",
        "--dest",
        "data/nt13/raw",
    ]
    assert words[words.index("--mirror") + 2 :] == [">", "logs/download/nt13.log", "2>&1"]


def test_the_issues_command_line_prints_a_quoted_command(tmp_path):
    """The reproduction of issue 14: `--config 'mirror=m; touch pwned #'` (YAML drops the comment)."""
    command = download_command(
        "--configfile", str(newstest_config(tmp_path / "c.yaml", None)), "--config", "mirror=m; touch pwned #"
    )
    assert "--mirror 'm; touch pwned' >" in command


def test_a_real_download_through_a_hostile_mirror_path_executes_nothing(tmp_path, real_data):
    """Run the download rule for real, from a working directory whose name has a space, through a
    mirror folder whose name carries `;`, `$()`, backquotes and quotes: the files arrive, and no
    command hidden in the name ran."""
    workdir = tmp_path / "work dir"
    workdir.mkdir()
    mirror = tmp_path / "mirror; touch pwned1 $(touch pwned2) `touch pwned3` 'q\" x"
    data = real_data("wmt/newstest2013/newstest2013.en.gz", "wmt/newstest2013/newstest2013.de.gz")
    mirror.symlink_to(data, target_is_directory=True)
    config = newstest_config(tmp_path / "c.yaml", str(mirror))
    result = snakemake(
        "--snakefile",
        str(REPO / "Snakefile"),
        "--directory",
        str(workdir),
        "--configfile",
        str(config),
        "--cores",
        "1",
        "-p",
        "data/nt13/raw/newstest2013.en",
        "data/nt13/raw/newstest2013.de",
        cwd=workdir,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    for lang in ("en", "de"):
        lines = (workdir / "data/nt13/raw" / f"newstest2013.{lang}").read_text(encoding="utf-8").splitlines()
        assert len(lines) == 3000
    manifest = json.loads((workdir / "data/nt13/raw/manifest.json").read_text(encoding="utf-8"))
    assert [Path(source["source"]).parent.parent.parent for source in manifest["sources"]] == [mirror] * 2
    planted = [path for folder in (tmp_path, workdir, REPO) for path in folder.rglob("pwned*")]
    assert planted == []


def test_every_shell_value_is_quoted():
    """Source audit: in every `shell:` of the rules (a table rule's wrapped in rules/common.smk's
    with_manifest, whose WRITE_MANIFEST is audited with them), each substituted value carries `:q`,
    except the job's thread count, resources (integers) and flag params that hold a constant option."""
    allowed = re.compile(r"^(threads|resources\.\w+|params\.(lowercase|aggressive|escape|truecased))$")
    found = 0
    for path in [REPO / "Snakefile", *sorted((REPO / "rules").rglob("*.smk"))]:
        text = path.read_text(encoding="utf-8")
        blocks = re.findall(
            r"shell:\n((?:\s+(?:launch\(|with_manifest\()?\"[^\n]*\n|\s+\)\n|\s+with_manifest\(\n)+)",
            text,
        )
        for block in blocks + re.findall(r"\nWRITE_MANIFEST = (\"[^\n]*)\n", text):
            for field in re.findall(r"(?<!\{)\{([^{}]+)\}(?!\})", block):
                found += 1
                name, _, spec = field.partition(":")
                assert spec.endswith("q") or allowed.match(name), f"{path.name}: unquoted {{{field}}}"
    assert found > 50


@pytest.mark.parametrize(
    ("overrides", "key"),
    [
        ({"corpora": {"toyworld": {"testsets": ["test; rm -rf x"]}}}, "corpora.toyworld.testsets[0]"),
        ({"corpora": {"toyworld": {"valid": "$(touch pwned)"}}}, "corpora.toyworld.valid"),
        ({"corpora": {"toyworld": {"pairs": ["en-de x"]}}}, "corpora.toyworld.pairs[0]"),
        ({"corpora": {"toyworld": {"preprocess": {"bpe": {"translit": ["ru;"]}}}}}, "translit[0]"),
        ({"corpora": {"toyworld": {"source": "wmt13 en-de"}}}, "corpora.toyworld.source"),
        ({"experiments": {"baseline": {"variants": {"a b": {}}}}}, "experiments.baseline.variants"),
        ({"experiments": {"baseline": {"evaluate": {"testsets": ["x'y"]}}}}, "evaluate.testsets[0]"),
        ({"experiments": {"baseline": {"corpus": "Toy World"}}}, "experiments.baseline.corpus"),
    ],
)
def test_names_that_become_files_are_narrowed_by_the_schema(overrides, key):
    with pytest.raises(ConfigError) as error:
        check_config(default_config_with(overrides), SCHEMA)
    assert key in str(error.value)


def test_the_default_and_the_paper_configs_pass_the_narrowed_schema():
    for path in [REPO / "config.yaml", *sorted((REPO / "experiments").glob("*.yaml"))]:
        check_config(yaml.safe_load(path.read_text(encoding="utf-8")), SCHEMA)
