"""Meteor 1.5 (Denkowski & Lavie 2014), the metric Libovický et al. (2018) report, run from a user's copy
of the release.

The release (``meteor-1.5.jar`` with ``data/paraphrase-<lang>.gz``) cannot be fetched on these
machines, and its source repository lacks the paraphrase tables, so the project never ships it: a
user who has it names the folder (config ``meteor: {home: PATH}``, ``evaluate --meteor-home PATH``)
and we run it with a Java runtime exactly as the paper's MultEval does: ``java -Xmx2G -jar
meteor-1.5.jar HYP REF -l LANG -norm -q``. With ``-q`` Meteor prints the segment scores to stderr and
the corpus score (statistics pooled over the corpus, not a mean of sentences) alone on stdout.

Without the release the project computes NLTK's METEOR (``meteor_ribes.py``): a different metric on
German, French and Czech, labelled :data:`NLTK_METEOR_LABEL` wherever it appears.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from nmtvariants.errors import InputError, MissingResourceError
from nmtvariants.fileio import PathLike

JAR_NAME = "meteor-1.5.jar"
METEOR15_LABEL = "Meteor 1.5"
NLTK_METEOR_LABEL = "METEOR (NLTK, English resources)"
# Meteor's language codes differ from ISO 639-1 for Czech; -norm is defined for these languages only.
METEOR_LANGUAGES = {"en": "en", "cs": "cz", "de": "de", "es": "es", "fr": "fr", "ar": "ar"}
GET_IT = (
    "get the Meteor 1.5 release (meteor-1.5.tar.gz from https://www.cs.cmu.edu/~alavie/METEOR/), "
    "unpack it and set meteor.home (evaluate --meteor-home) to the folder with meteor-1.5.jar and data/"
)


def meteor_language(lang: str) -> str:
    """Meteor's code for an ISO language code (``cs`` -> ``cz``), or an error naming the supported ones."""
    code = METEOR_LANGUAGES.get(lang.lower().split("-")[0])
    if code is None:
        raise InputError(
            f"Meteor 1.5 has no -norm settings for language {lang!r}; "
            f"it supports {', '.join(sorted(METEOR_LANGUAGES))}"
        )
    return code


def missing_release_files(home: PathLike, langs: Sequence[str]) -> list[str]:
    """The files of the release (and the Java runtime) that running it for ``langs`` needs but lacks."""
    root = Path(home).expanduser()
    missing = [] if shutil.which("java") else ["a Java runtime (java on PATH)"]
    wanted = [JAR_NAME] + [f"data/paraphrase-{meteor_language(lang)}.gz" for lang in langs]
    return missing + [str(root / name) for name in wanted if not (root / name).is_file()]


def check_release(home: PathLike, langs: Sequence[str]) -> None:
    """Stop before scoring when the release is incomplete, saying what to get and where to put it."""
    missing = missing_release_files(home, langs)
    if missing:
        raise MissingResourceError(f"Meteor 1.5 release incomplete, missing {', '.join(missing)}: {GET_IT}")


def meteor_command(home: PathLike, hyp: PathLike, ref: PathLike, lang: str, n_refs: int = 1) -> list[str]:
    """The MultEval command line (``-r N`` with N references interleaved line by line in ``ref``)."""
    command = ["java", "-Xmx2G", "-jar", str(Path(home).expanduser() / JAR_NAME), str(hyp), str(ref)]
    command += ["-l", meteor_language(lang), "-norm", "-q"]
    return command + (["-r", str(n_refs)] if n_refs > 1 else [])


def parse_score(stdout: str) -> float:
    """The corpus score that ``-q`` prints alone on the last line of stdout, in [0, 1]."""
    lines = [line.strip() for line in stdout.splitlines() if line.strip()]
    try:
        score = float(lines[-1])
    except (IndexError, ValueError):
        raise InputError(f"Meteor 1.5 printed no corpus score (last stdout line: {lines[-1:]})") from None
    if not 0.0 <= score <= 1.0:
        raise InputError(f"Meteor 1.5 printed {score}, outside [0, 1]")
    return score


def meteor15(hyps: Sequence[str], refs: Sequence[Sequence[str]], lang: str, home: PathLike) -> dict[str, Any]:
    """Corpus Meteor 1.5 (x100) of detokenised or tokenised lines, as a score record."""
    check_release(home, [lang])
    with tempfile.TemporaryDirectory(prefix="meteor15-") as folder:
        hyp_file, ref_file = Path(folder, "hyp.txt"), Path(folder, "ref.txt")
        hyp_file.write_text("".join(f"{line}\n" for line in hyps), encoding="utf-8")
        interleaved = [ref[index] for index in range(len(hyps)) for ref in refs]
        ref_file.write_text("".join(f"{line}\n" for line in interleaved), encoding="utf-8")
        command = meteor_command(home, hyp_file, ref_file, lang, len(refs))
        done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        tail = done.stderr.strip().splitlines()[-1:] or ["no message"]
        raise InputError(f"Meteor 1.5 failed (exit {done.returncode}): {tail[0]}")
    code = meteor_language(lang)
    return {
        "name": METEOR15_LABEL,
        "score": 100.0 * parse_score(done.stdout),
        "signature": f"meteor-1.5|lang:{code}|norm|corpus:pooled|refs:{len(refs)}",
        "implementation": f"{JAR_NAME} ({' '.join(command[:3])} ... -l {code} -norm -q)",
    }
