"""The Meteor 1.5 adapter: the MultEval command line, run by a real Java runtime on a stub jar, and the
parsing of Meteor's recorded ``-q`` output; an incomplete release stops before scoring.

The release itself cannot be fetched here, so the stub stands in for ``meteor-1.5.jar``: it records its
arguments and the files it was given, and prints what Meteor 1.5 prints with ``-q`` (segment scores on
stderr, the corpus score alone on stdout). No score is made up: the test checks that the adapter
passes our files and options through and reads back exactly the number the jar printed.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from nmtvariants.errors import InputError, MissingResourceError
from nmtvariants.evaluation.evaluate import evaluate
from nmtvariants.evaluation.meteor15 import (
    METEOR15_LABEL,
    check_release,
    meteor15,
    meteor_command,
    meteor_language,
    parse_score,
)
from nmtvariants.reporting.results import scores_table

# What `java -jar meteor-1.5.jar hyp ref -l de -norm -q` prints on stdout for a two-line test set
# (Meteor.scorePlaintext: with quiet, segment scores go to stderr and the pooled score to stdout).
RECORDED_STDOUT = "0.3471862143622454\n"
RECORDED_STDERR = "0.41234\n0.29876\n"

STUB = """
import java.nio.file.*;
import java.util.*;

public class Meteor {
    public static void main(String[] args) throws Exception {
        String record = System.getenv("METEOR_STUB_RECORD");
        List<String> lines = new ArrayList<>();
        lines.add(String.join("\\u0001", args));
        lines.add(new String(Files.readAllBytes(Paths.get(args[0])), "UTF-8"));
        lines.add(new String(Files.readAllBytes(Paths.get(args[1])), "UTF-8"));
        Files.write(Paths.get(record), String.join("\\u0002", lines).getBytes("UTF-8"));
        System.err.print(System.getenv("METEOR_STUB_STDERR"));
        System.out.print(System.getenv("METEOR_STUB_STDOUT"));
    }
}
"""


@pytest.fixture(scope="module")
def release(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder laid out like the Meteor 1.5 release, whose jar is the stub."""
    assert shutil.which("javac") and shutil.which("jar"), (
        "a JDK is needed: apt-get install default-jdk-headless"
    )
    home = tmp_path_factory.mktemp("meteor-1.5")
    build = tmp_path_factory.mktemp("stub-build")
    (build / "Meteor.java").write_text(STUB, encoding="utf-8")
    subprocess.run(["javac", "-d", str(build), str(build / "Meteor.java")], check=True)
    subprocess.run(
        ["jar", "cfe", str(home / "meteor-1.5.jar"), "Meteor", "-C", str(build), "Meteor.class"], check=True
    )
    (home / "data").mkdir()
    for lang in ("de", "cz", "fr"):
        (home / "data" / f"paraphrase-{lang}.gz").write_bytes(b"")
    return home


@pytest.fixture
def stub_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    record = tmp_path / "stub-record.txt"
    monkeypatch.setenv("METEOR_STUB_RECORD", str(record))
    monkeypatch.setenv("METEOR_STUB_STDOUT", RECORDED_STDOUT)
    monkeypatch.setenv("METEOR_STUB_STDERR", RECORDED_STDERR)
    return record


def test_the_jar_receives_the_multeval_command_and_our_lines(release: Path, stub_env: Path) -> None:
    hyps = ["ein Hund läuft", "zwei Katzen"]
    refs = [["ein Hund rennt", "zwei Katzen schlafen"]]
    record = meteor15(hyps, refs, "de", release)
    args, hyp_text, ref_text = stub_env.read_text(encoding="utf-8").split("\u0002")
    args = args.split("\u0001")
    assert args[2:] == ["-l", "de", "-norm", "-q"]
    assert hyp_text == "ein Hund läuft\nzwei Katzen\n"
    assert ref_text == "ein Hund rennt\nzwei Katzen schlafen\n"
    assert record["score"] == pytest.approx(34.71862143622454)
    assert record["name"] == METEOR15_LABEL
    assert record["signature"] == "meteor-1.5|lang:de|norm|corpus:pooled|refs:1"


def test_several_references_are_interleaved_and_counted(release: Path, stub_env: Path) -> None:
    meteor15(["a", "b"], [["a1", "b1"], ["a2", "b2"]], "cs", release)
    args, _, ref_text = stub_env.read_text(encoding="utf-8").split("\u0002")
    assert args.split("\u0001")[2:] == ["-l", "cz", "-norm", "-q", "-r", "2"]
    assert ref_text == "a1\na2\nb1\nb2\n"


def test_evaluate_with_a_meteor_home_writes_a_named_meteor_15_record(
    release: Path, stub_env: Path, tmp_path: Path
) -> None:
    hyp, ref = tmp_path / "hyp.de", tmp_path / "ref.de"
    hyp.write_text("ein Hund läuft\n", encoding="utf-8")
    ref.write_text("ein Hund rennt\n", encoding="utf-8")
    scores = evaluate(hyp, ref, "de", ["bleu", "meteor"], meteor_home=release)
    assert scores["scores"]["meteor"]["name"] == "Meteor 1.5"
    path = tmp_path / "scores.json"
    path.write_text(json.dumps({"system": "e/en-de/v", "testset": "test", **scores}), encoding="utf-8")
    frame, _ = scores_table([path])
    assert "Meteor 1.5" in frame.columns and "METEOR (NLTK, English resources)" not in frame.columns


def test_the_command_line_without_running_it() -> None:
    command = meteor_command("/opt/meteor", "h.txt", "r.txt", "fr")
    jar = "/opt/meteor/meteor-1.5.jar"
    assert command == ["java", "-Xmx2G", "-jar", jar, "h.txt", "r.txt", "-l", "fr", "-norm", "-q"]


def test_parse_score_reads_the_last_stdout_line_and_rejects_anything_else() -> None:
    assert parse_score(RECORDED_STDOUT) == pytest.approx(0.3471862143622454)
    with pytest.raises(InputError, match="no corpus score"):
        parse_score("Error: test and reference not same length\n")
    with pytest.raises(InputError, match="outside"):
        parse_score("34.7\n")


def test_languages_without_norm_settings_are_refused() -> None:
    assert meteor_language("cs") == "cz"
    with pytest.raises(InputError, match="no -norm settings for language 'ja'"):
        meteor_language("ja")


def test_an_incomplete_release_says_what_to_get(tmp_path: Path) -> None:
    (tmp_path / "meteor-1.5.jar").write_bytes(b"")
    with pytest.raises(MissingResourceError) as error:
        check_release(tmp_path, ["de", "cs"])
    missing, what_to_do = str(error.value).split(": get the", 1)
    assert "paraphrase-de.gz" in missing and "paraphrase-cz.gz" in missing
    assert "meteor-1.5.jar" not in missing  # the jar is there
    assert "meteor.home" in what_to_do
