"""Bad files at every reader, seen as a user sees them: the exit code and what lands on stderr.

A UTF-8 byte-order mark is removed with one warning (never a token); NUL bytes are rejected with
the file and line; a truncated or corrupt gzip, tar or zip file gives one line naming it and exit
code 2, never a traceback.
"""

from __future__ import annotations

import gzip
import io
import os
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

from nmtvariants.cli import main
from nmtvariants.corpora.catalogue import Extract, Recipe, RemoteFile
from nmtvariants.corpora.extract import extract_recipe, unpack_archive, verify_integrity
from nmtvariants.errors import InputError
from nmtvariants.fileio import count_lines, read_lines
from nmtvariants.text.moses import Tokenizer

BOM = b"\xef\xbb\xbf"
EN = [f"A man number {i} rides a horse ." for i in range(400)]
DE = [f"Ein Mann Nummer {i} reitet ein Pferd ." for i in range(400)]


def _truncated_gzip(path: Path, lines: list[str]) -> Path:
    data = gzip.compress("".join(line + "\n" for line in lines).encode())
    path.write_bytes(data[: len(data) // 2])
    return path


def _one_error_line(err: str, command: str) -> str:
    """stderr holds exactly one error line for ``command`` and no traceback; return that line."""
    assert "Traceback" not in err
    errors = [line for line in err.splitlines() if line.startswith(f"nmtvariants {command}: error:")]
    assert len(errors) == 1, err
    return errors[0]


# ---------------------------------------------------------------- byte-order mark (item 6)
def test_bom_is_stripped_once_with_one_warning(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "bom.en"
    path.write_bytes(BOM + b"A man .\n" + BOM + b"kept in the middle\n")
    assert list(read_lines(path)) == ["A man .", "\ufeffkept in the middle"]
    assert sum("byte-order mark" in record.message for record in caplog.records) == 1


def test_tokenize_cli_does_not_make_the_bom_a_token(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "bom.en"
    path.write_bytes(BOM + b"A man rides a horse.\nTwo dogs play.\n")
    out = tmp_path / "tok.en"
    assert main(["tokenize", "-l", "en", str(path), "-o", str(out)]) == 0
    tokenizer = Tokenizer("en")
    assert out.read_text(encoding="utf-8").splitlines() == [
        tokenizer("A man rides a horse."),
        tokenizer("Two dogs play."),
    ]
    assert "\ufeff" not in out.read_text(encoding="utf-8")
    assert sum("byte-order mark" in record.message for record in caplog.records) == 1


def test_tokenize_cli_strips_the_bom_on_stdin(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "nmtvariants", "tokenize", "-l", "en"],
        input=BOM + b"A man .\n",
        capture_output=True,
        check=False,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    assert result.returncode == 0, result.stderr.decode()
    assert result.stdout == b"A man .\n"
    assert b"byte-order mark" in result.stderr


def test_clean_cli_does_not_keep_the_bom(tmp_path: Path) -> None:
    src, tgt = tmp_path / "in.en", tmp_path / "in.de"
    src.write_bytes(BOM + b"a b c\nd e\n")
    tgt.write_bytes(BOM + b"x y z\nw v\n")
    outs = [tmp_path / "out.en", tmp_path / "out.de"]
    argv = ["clean", "--src-in", str(src), "--tgt-in", str(tgt), "--src-out", str(outs[0])]
    assert main([*argv, "--tgt-out", str(outs[1])]) == 0
    assert outs[0].read_bytes() == b"a b c\nd e\n"
    assert outs[1].read_bytes() == b"x y z\nw v\n"


# ---------------------------------------------------------------- NUL bytes (item 8)
def test_nul_byte_is_rejected_with_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "nul.en"
    path.write_bytes(b"fine\nA man\x00 rides\n")
    with pytest.raises(InputError, match=rf"^{path}:2: NUL byte at byte offset 5"):
        list(read_lines(path))


@pytest.mark.parametrize("command", ["tokenize", "clean"])
def test_nul_byte_stops_tokenize_and_clean(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    bad, good = tmp_path / "in.en", tmp_path / "in.de"
    bad.write_bytes(b"a b\nc\x00d\n")
    good.write_bytes(b"x y\nz w\n")
    out = tmp_path / "out.en"
    if command == "tokenize":
        argv = ["tokenize", "-l", "en", str(bad), "-o", str(out)]
    else:
        argv = ["clean", "--src-in", str(bad), "--tgt-in", str(good), "--src-out", str(out)]
        argv += ["--tgt-out", str(tmp_path / "out.de")]
    assert main(argv) == 2
    line = _one_error_line(capsys.readouterr().err, command)
    assert f"{bad}:2: NUL byte" in line
    assert not out.exists()


def test_utf16_file_is_rejected_not_read_as_text(tmp_path: Path) -> None:
    path = tmp_path / "utf16.en"
    path.write_bytes("A man rides .\n".encode("utf-16-le"))
    with pytest.raises(InputError, match="utf-16"):
        list(read_lines(path))


# ---------------------------------------------------------------- truncated gzip (item 7)
def test_tokenize_truncated_gzip_in_a_subprocess(tmp_path: Path) -> None:
    """The issue's reproduction, run as a user runs it: one line, exit code 2, no traceback."""
    corpus = _truncated_gzip(tmp_path / "corpus.en.gz", EN * 20)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    result = subprocess.run(
        [sys.executable, "-m", "nmtvariants", "tokenize", "-l", "en", str(corpus), "-o", str(tmp_path / "o")],
        capture_output=True,
        text=True,
        check=False,
        env=env,
    )
    assert result.returncode == 2
    line = _one_error_line(result.stderr, "tokenize")
    assert str(corpus) in line and "truncated or corrupt gzip" in line
    assert not (tmp_path / "o").exists()


def test_clean_truncated_gzip(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = _truncated_gzip(tmp_path / "train.en.gz", EN * 20)
    tgt = tmp_path / "train.de"
    tgt.write_text("".join(line + "\n" for line in DE * 20), encoding="utf-8")
    argv = ["clean", "--src-in", str(src), "--tgt-in", str(tgt), "--src-out", str(tmp_path / "o.en")]
    assert main([*argv, "--tgt-out", str(tmp_path / "o.de"), "--report", str(tmp_path / "r.json")]) == 2
    line = _one_error_line(capsys.readouterr().err, "clean")
    assert str(src) in line and "truncated or corrupt gzip" in line
    assert not (tmp_path / "o.en").exists()


def test_europarl_intersect_truncated_gzip(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    foreign = _truncated_gzip(tmp_path / "ep.de.gz", DE * 20)
    english = tmp_path / "ep.en.gz"
    english.write_bytes(gzip.compress("".join(line + "\n" for line in EN * 20).encode()))
    argv = ["europarl-intersect", "--bitext", "de", str(foreign), str(english)]
    assert main([*argv, "--out-dir", str(tmp_path / "out"), "--valid", "1", "--test", "1"]) == 2
    line = _one_error_line(capsys.readouterr().err, "europarl-intersect")
    assert str(foreign) in line and "truncated or corrupt gzip" in line


@pytest.mark.parametrize("damage", ["truncated", "bad-crc", "not-gzip"])
def test_gzip_damage_kinds_are_input_errors(tmp_path: Path, damage: str) -> None:
    data = gzip.compress("".join(line + "\n" for line in EN).encode())
    path = tmp_path / "c.en.gz"
    if damage == "truncated":
        path.write_bytes(data[:-12])
    elif damage == "bad-crc":
        path.write_bytes(data[:-8] + bytes(b ^ 0xFF for b in data[-8:-4]) + data[-4:])
    else:
        path.write_bytes(b"plain text, named .gz\n")
    with pytest.raises(InputError, match=rf"^{path}: truncated or corrupt gzip"):
        list(read_lines(path))
    with pytest.raises(InputError, match=rf"^{path}: truncated or corrupt gzip"):
        count_lines(path)


# ---------------------------------------------------------------- corrupt tar / zip at extraction
def _tgz(members: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def _zip(members: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return buffer.getvalue()


def _members() -> dict[str, bytes]:
    return {
        "corpus/train.en": "".join(line + "\n" for line in EN).encode(),
        "corpus/train.de": "".join(line + "\n" for line in DE).encode(),
    }


def _corrupt_zip() -> bytes:
    data = bytearray(_zip(_members()))
    start = data.index(b"corpus/train.en") + len("corpus/train.en") + 20  # inside the deflate stream
    for offset in range(start, start + 40):
        data[offset] ^= 0x5A
    return bytes(data)


@pytest.mark.parametrize("kind", ["tgz-truncated", "zip-corrupt"])
def test_extraction_of_a_damaged_archive_names_it_and_writes_nothing(tmp_path: Path, kind: str) -> None:
    """No pin, no integrity check first: the extraction itself still reports the file in one line."""
    downloads, dest = tmp_path / "downloads", tmp_path / "dest"
    downloads.mkdir()
    if kind == "tgz-truncated":
        name = "corpus.tgz"
        data = _tgz(_members())
        (downloads / name).write_bytes(data[: len(data) // 2])
    else:
        name = "corpus.zip"
        (downloads / name).write_bytes(_corrupt_zip())
    recipe = Recipe(
        (RemoteFile(name),),
        (Extract("train.en", name, "corpus/train.en"), Extract("train.de", name, "corpus/train.de")),
    )
    with pytest.raises(InputError) as error:
        extract_recipe(recipe, downloads, dest)
    message = str(error.value)
    assert str(downloads / name) in message and "\n" not in message
    assert "truncated or corrupt" in message
    assert sorted(p.name for p in dest.iterdir()) == []
    with pytest.raises(InputError, match="corrupt"):
        verify_integrity(downloads / name)


@pytest.mark.parametrize("kind", ["tgz", "zip"])
def test_unpack_of_a_damaged_archive_names_it(tmp_path: Path, kind: str) -> None:
    path = tmp_path / f"images.{kind}"
    if kind == "tgz":
        data = _tgz(_members())
        path.write_bytes(data[: len(data) // 2])
    else:
        path.write_bytes(_corrupt_zip())
    with pytest.raises(InputError, match=rf"^{path}: truncated or corrupt (tar|zip) archive"):
        unpack_archive(path, tmp_path / "images")
    assert not (tmp_path / "images").exists()


def test_good_archives_still_extract(tmp_path: Path) -> None:
    downloads = tmp_path / "downloads"
    downloads.mkdir()
    (downloads / "c.tgz").write_bytes(_tgz(_members()))
    recipe = Recipe(
        (RemoteFile("c.tgz"),),
        (Extract("train.en", "c.tgz", "corpus/train.en"), Extract("train.de", "c.tgz", "corpus/train.de")),
    )
    counts = extract_recipe(recipe, downloads, tmp_path / "dest")
    assert counts == {"train.en": len(EN), "train.de": len(DE)}
    assert (tmp_path / "dest/train.de").read_text(encoding="utf-8").splitlines() == DE


def test_download_cli_with_a_truncated_gzip_in_the_mirror(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The download command (mirror-only files: no network) names the damaged file, exit code 2."""
    folder = tmp_path / "mirror" / "contrawsd" / "testsuite_wmt18"
    folder.mkdir(parents=True)
    for stem in ("de", "en", "en.detok", "doc_ids.de"):
        _truncated_gzip(folder / f"de-en.wsd.task.{stem}.gz", EN * 20)
    dest = tmp_path / "dest"
    argv = ["download", "contrawsd_wmt18", "--dest", str(dest), "--mirror", str(tmp_path / "mirror")]
    assert main([*argv, "--retries", "1"]) == 2
    line = _one_error_line(capsys.readouterr().err, "download")
    assert line.startswith("nmtvariants download: error: de-en.wsd.task.de.gz: no valid copy found")
    assert "sha256 mismatch" in line and "run the download again" in line
    assert not (dest / "manifest.json").exists()
