"""The table commands' manifest (nmtvariants.reporting.manifest): what a rule writes is what a command
reads, the rule's inputs are every file it names, and every mistake in a manifest is one line naming
the manifest, the entry and what is wrong."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nmtvariants.cli import main
from nmtvariants.errors import InputError
from nmtvariants.reporting.manifest import (
    Entry,
    groups,
    manifest_inputs,
    manifest_json,
    read_manifest,
    toy_runs,
    write_manifest,
)


def entries(tmp_path: Path) -> list[Entry]:
    for name in ("a.json", "b.json", "s.json", "train_log.csv"):
        (tmp_path / name).write_text("{}\n", encoding="utf-8")
    return [
        Entry({"scores": str(tmp_path / "a.json")}, "toy", "en-de", "lexical", 1, "test"),
        Entry({"scores": str(tmp_path / "b.json")}, "toy", "en-de", "lexical", 2, "test", toy=True),
        Entry({"significance": str(tmp_path / "s.json")}, "toy", "en-de", "lexical", testset="test",
              info={"switches": {"shortcuts": {}}}),
        Entry({"train_log": str(tmp_path / "train_log.csv")}, "toy", "en-de", "baseline", label="base"),
    ]  # fmt: skip


def test_what_a_rule_writes_is_what_the_command_reads(tmp_path):
    written = entries(tmp_path)
    path = write_manifest(tmp_path / "m.json", written)
    assert path.read_text(encoding="utf-8") == manifest_json(written) + "\n"
    read = read_manifest(path)
    assert read == written
    assert read[1].where == f"{path}, entry 2 (toy/en-de/lexical seed 2 on test)"
    assert list(groups(read).values()) == [read[:3], read[3:]]  # a system's replicas and its test
    assert "seed" not in json.loads(manifest_json(written))[2]  # a file over every seed has none
    assert toy_runs(read) and not toy_runs(read[2:])  # one toy-world entry makes a toy table


def test_the_inputs_are_every_file_once_and_a_train_log_through_its_final_pt(tmp_path):
    written = entries(tmp_path)
    assert manifest_inputs([*written, written[0]]) == [
        str(tmp_path / "a.json"),
        str(tmp_path / "b.json"),
        str(tmp_path / "s.json"),
        str(tmp_path / "final.pt"),  # training rewrites train_log.csv: no rule declares it
    ]


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ("{not json", r"m\.json:1: manifest is not JSON"),
        ("[]", r"m\.json: a manifest is a non-empty JSON list of entries"),
        ('{"files": {}}', r"m\.json: a manifest is a non-empty JSON list"),
        ('["a.json"]', r"m\.json, entry 1: expected a JSON object, got str"),
        ('[{"files": {"scores": "a.json"}, "sed": 1}]', r"m\.json, entry 1: unknown key\(s\) sed \(known: "),
        ('[{"files": {"scores": "a.json"}, "seed": "1"}]', r"entry 1: 'seed' must be a int, got '1'"),
        ('[{"files": {"scores": "a.json"}, "seed": true}]', r"entry 1: 'seed' must be a int, got True"),
        ('[{"files": {"scores": "a.json"}, "toy": 1}]', r"entry 1: 'toy' must be a bool, got 1"),
        ('[{"variant": "x"}]', r"m\.json, entry 1 \(x\): 'files' must be a non-empty object of role -> path"),
        ('[{"files": {"scores": ""}}]', r"entry 1: file 'scores' must be a path, got ''"),
        ('[{"files": {"scores": "a.json"}, "info": []}]', r"entry 1: 'info' must be an object, got \[\]"),
    ],
)
def test_a_malformed_manifest_is_one_line_naming_the_entry(tmp_path, monkeypatch, document, message):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a.json").write_text("{}", encoding="utf-8")
    (tmp_path / "m.json").write_text(document, encoding="utf-8")
    with pytest.raises(InputError, match=message) as error:
        read_manifest("m.json")
    assert "\n" not in str(error.value)


def test_a_command_names_the_missing_role_name_and_files(tmp_path):
    path = write_manifest(tmp_path / "m.json", entries(tmp_path))
    with pytest.raises(InputError, match=r"m\.json, entry 3 \(toy/en-de/lexical on test\): no 'scores' file"):
        read_manifest(path, roles=["scores"])
    with pytest.raises(
        InputError, match=r"entry 3 \(toy/en-de/lexical on test\): no 'seed'; this table needs"
    ):
        read_manifest(path, names=["seed"])
    for name in ("a.json", "s.json"):
        (tmp_path / name).unlink()
    with pytest.raises(InputError, match=r"m\.json: 2 file\(s\) it names are missing: .*a\.json, .*s\.json;"):
        read_manifest(path)
    with pytest.raises(InputError, match=r"no such manifest"):
        read_manifest(tmp_path / "none.json")


def test_a_table_command_reports_a_bad_manifest_as_one_line(tmp_path, capsys):
    (tmp_path / "m.json").write_text('[{"files": {"gates": "nowhere.csv"}}]', encoding="utf-8")
    args = ["emelin2019-gates", "--manifest", str(tmp_path / "m.json"), "--title", "G"]
    assert main([*args, "--out", str(tmp_path / "gates.md")]) == 2
    assert "1 file(s) it names are missing: nowhere.csv" in capsys.readouterr().err
    assert not (tmp_path / "gates.md").exists()
