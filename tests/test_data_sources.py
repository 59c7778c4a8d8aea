"""The test-data fixture's own logic, on temporary mirrors: pins are checked, sources are tried in
order, and a file no source has fails with one message per file saying where it comes from."""

from __future__ import annotations

import gzip
import hashlib
from pathlib import Path

import pytest
from data_sources import TEST_ONLY, DataUnavailable, RealData, Source, describe

from nmtvariants.corpora.catalogue import MIRROR_SHA256

GOOD = b"ein Mann reitet\nzwei Hunde spielen\n"
SHA = hashlib.sha256(GOOD).hexdigest()


def _source(relative: str = "toy/sentences.txt", **fields: str) -> Source:
    return Source(relative, SHA, **fields)


def _mirror(root: Path, relative: str, data: bytes) -> Path:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return root


def test_file_from_a_mirror_lands_in_the_cache_verified(tmp_path: Path) -> None:
    mirror = _mirror(tmp_path / "mirror", "toy/sentences.txt", GOOD)
    data = RealData(tmp_path / "cache", [str(mirror)], upstream=False, extra={"toy/sentences.txt": _source()})
    root = data("toy/sentences.txt")
    assert root == tmp_path / "cache" and (root / "toy/sentences.txt").read_bytes() == GOOD
    (mirror / "toy/sentences.txt").unlink()
    assert data("toy/sentences.txt") == root  # served from the cache now


def test_wrong_sha256_in_the_mirror_is_rejected_and_the_next_mirror_used(tmp_path: Path) -> None:
    bad = _mirror(tmp_path / "bad", "toy/sentences.txt", GOOD.replace(b"Mann", b"Frau"))
    good = _mirror(tmp_path / "good", "toy/sentences.txt", GOOD)
    extra = {"toy/sentences.txt": _source()}
    with pytest.raises(DataUnavailable) as error:
        RealData(tmp_path / "c1", [str(bad)], upstream=False, extra=extra)("toy/sentences.txt")
    message = str(error.value)
    assert message.startswith("toy/sentences.txt: not available") and "sha256 mismatch" in message
    assert not (tmp_path / "c1/toy/sentences.txt").exists()
    root = RealData(tmp_path / "c2", [str(bad), str(good)], upstream=False, extra=extra)("toy/sentences.txt")
    assert (root / "toy/sentences.txt").read_bytes() == GOOD


def test_a_cached_copy_that_no_longer_matches_is_replaced(tmp_path: Path) -> None:
    _mirror(tmp_path / "cache", "toy/sentences.txt", b"edited by hand\n")
    mirror = _mirror(tmp_path / "mirror", "toy/sentences.txt", GOOD)
    data = RealData(tmp_path / "cache", [str(mirror)], upstream=False, extra={"toy/sentences.txt": _source()})
    assert (data("toy/sentences.txt") / "toy/sentences.txt").read_bytes() == GOOD


def test_missing_files_fail_with_one_message_each_naming_their_origin(tmp_path: Path) -> None:
    extra = {
        "toy/a.txt": _source("toy/a.txt", url="https://example.org/a.txt"),
        "toy/b.txt": _source("toy/b.txt", corpus="some_corpus", output="test.b"),
    }
    data = RealData(tmp_path / "cache", [str(tmp_path / "empty")], upstream=False, extra=extra)
    with pytest.raises(DataUnavailable) as error:
        data("toy/a.txt", "toy/b.txt", "toy/unknown.txt")
    lines = str(error.value).splitlines()
    assert len(lines) == 3
    assert lines[0].startswith("toy/a.txt: not available") and "https://example.org/a.txt" in lines[0]
    assert f"mirror {tmp_path / 'empty'}" in lines[0] and SHA in lines[0]
    assert "`nmtvariants download some_corpus` (its test.b)" in lines[1]
    assert lines[2].startswith("toy/unknown.txt: unknown test-data file")
    assert isinstance(error.value, AssertionError)  # a failure, never a skip


def test_upstream_url_is_used_when_no_mirror_has_the_file(tmp_path: Path) -> None:
    upstream = _mirror(tmp_path / "upstream", "a.txt", GOOD)
    extra = {"toy/a.txt": _source("toy/a.txt", url=(upstream / "a.txt").as_uri())}
    root = RealData(tmp_path / "cache", [], extra=extra)("toy/a.txt")
    assert (root / "toy/a.txt").read_bytes() == GOOD


def test_plain_upstream_content_is_stored_as_the_mirrors_gz(tmp_path: Path) -> None:
    upstream = _mirror(tmp_path / "upstream", "a.txt", GOOD)
    stored_in_mirror = hashlib.sha256(gzip.compress(GOOD, mtime=1)).hexdigest()  # another gzip's bytes
    source = Source("toy/a.txt.gz", stored_in_mirror, SHA, url=(upstream / "a.txt").as_uri())
    root = RealData(tmp_path / "cache", [], extra={source.relative: source})("toy/a.txt.gz")
    assert gzip.decompress((root / "toy/a.txt.gz").read_bytes()) == GOOD


def test_every_pin_the_fixture_knows_is_a_sha256() -> None:
    for relative in [*TEST_ONLY, *MIRROR_SHA256]:
        source = describe(relative)
        assert source is not None and len(source.sha256) == 64, relative
    newstest = describe("wmt/en-de/newstest2014.de.gz")
    assert newstest is not None and newstest.corpus is not None and newstest.output is not None
    raw = describe("multi30k/task1/raw/val.de.gz")
    assert raw is not None and raw.url is not None and raw.url.endswith("raw/val.de.gz")
