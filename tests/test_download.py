"""Downloads against the real mirror (folder and local HTTP server): pins, retries, truncation, gates."""

from __future__ import annotations

import functools
import gzip
import hashlib
import http.server
import io
import itertools
import tarfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from data_sources import RealData

from nmtvariants.cli import main
from nmtvariants.corpora import multi30k
from nmtvariants.corpora.catalogue import Corpus, Extract, Recipe, RemoteFile
from nmtvariants.corpora.download import MANIFEST, download_corpus, fetch, sha256_of
from nmtvariants.errors import InputError, MissingResourceError

# shared/data/README.md inventory: sha256 of the uncompressed newstest2014 en-de files
NEWSTEST2014_EN_SHA = "7294bccf2879a97b3706b95c9595f1459617a8ee7130d5d8581c910e69736971"
NEWSTEST2014_DE_SHA = "ae5d110486bc33d7175e9e28c7d0051eb3e5fcd2166dd93371089852c091a20e"


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def serve() -> Iterator:
    """Start ThreadingHTTPServers on 127.0.0.1 for a handler; all are shut down at the end."""
    servers: list[http.server.ThreadingHTTPServer] = []

    def start(handler: type[http.server.BaseHTTPRequestHandler]) -> str:
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        thread.start()
        servers.append(server)
        return f"http://127.0.0.1:{server.server_address[1]}"

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


@pytest.fixture
def http_mirror(serve, real_data: RealData) -> str:
    return serve(functools.partial(_Quiet, directory=str(real_data.corpus("wmt14/full:en-de"))))


def test_local_folder_mirror_gives_multi30k_with_manifest(tmp_path: Path, real_data: RealData) -> None:
    mirror = real_data.corpus("multi30k")
    manifest = download_corpus("multi30k", tmp_path, mirror=str(mirror))
    assert all(s["source"].startswith(str(mirror)) for s in manifest["sources"])
    for name, entry in manifest["outputs"].items():
        assert entry["sha256"] == sha256_of(tmp_path / name)
    # independent read of the mirrored gzip file with the gzip module
    with gzip.open(real_data.file("multi30k/task1/raw/val.de.gz"), "rt", encoding="utf-8") as handle:
        assert (tmp_path / "valid.de").read_text(encoding="utf-8") == handle.read()
    assert multi30k.check_parallel(tmp_path) == multi30k.LINES


def test_url_prefix_mirror_uses_the_mirrored_plain_text(tmp_path: Path, http_mirror: str) -> None:
    manifest = download_corpus("wmt14/full:en-de", tmp_path, mirror=http_mirror, retries=1)
    assert manifest["recipe"] == "mirror-layout"
    assert all(s["source"].startswith(http_mirror) for s in manifest["sources"])
    assert manifest["outputs"]["newstest2014-full.en"] == {"lines": 3003, "sha256": NEWSTEST2014_EN_SHA}
    assert manifest["outputs"]["newstest2014-full.de"] == {"lines": 3003, "sha256": NEWSTEST2014_DE_SHA}
    assert (tmp_path / MANIFEST).exists()


def test_sha256_mismatch_is_rejected_with_expected_and_actual(tmp_path: Path, real_data: RealData) -> None:
    path = "multi30k/task1/image_splits/val.txt"
    mirror = real_data(path)
    actual = hashlib.sha256((mirror / path).read_bytes()).hexdigest()
    remote = RemoteFile("val.images.txt", mirror=path, sha256="0" * 64)
    with pytest.raises(InputError) as error:
        fetch(remote, tmp_path, mirror=str(mirror), mirror_only=True)
    message = str(error.value)
    assert "val.images.txt" in message and "0" * 64 in message and actual in message
    assert list(tmp_path.iterdir()) == []  # nothing left behind, not even a partial file


def _single_file_corpus(name: str, mirror_path: str, fmt: str = "text", member: str | None = None) -> Corpus:
    return Corpus(
        "test-corpus",
        "made by a test",
        Recipe((RemoteFile(name, mirror=mirror_path),), (Extract("test.xx", name, member, fmt),)),
    )


def test_truncated_gz_is_detected_and_nothing_is_extracted(tmp_path: Path, real_data: RealData) -> None:
    mirror = tmp_path / "mirror"
    mirror.mkdir()
    data = (real_data.file("multi30k/task1/raw/val.en.gz")).read_bytes()
    (mirror / "val.en.gz").write_bytes(data[: len(data) // 2])
    dest = tmp_path / "dest"
    with pytest.raises(InputError, match="truncated or corrupt gz"):
        download_corpus(_single_file_corpus("val.en.gz", "val.en.gz"), dest, mirror=str(mirror))
    assert not (dest / "test.xx").exists() and not (dest / MANIFEST).exists()
    assert list((dest / "downloads").iterdir()) == []


def test_truncated_tgz_is_detected_and_nothing_is_extracted(tmp_path: Path, real_data: RealData) -> None:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        archive.add(real_data.file("kftt/orig/kyoto-dev.en"), arcname="kftt/kyoto-dev.en")
        archive.add(real_data.file("kftt/orig/kyoto-test.en"), arcname="kftt/kyoto-test.en")
    mirror = tmp_path / "mirror"
    mirror.mkdir()
    whole = buffer.getvalue()
    (mirror / "good.tgz").write_bytes(whole)
    (mirror / "bad.tgz").write_bytes(whole[: len(whole) * 2 // 3])
    good = download_corpus(
        _single_file_corpus("good.tgz", "good.tgz", member="kftt/kyoto-dev.en"),
        tmp_path / "ok",
        mirror=str(mirror),
    )
    assert good["outputs"]["test.xx"]["lines"] == 1166
    dest = tmp_path / "dest"
    with pytest.raises(InputError, match="truncated or corrupt tar"):
        download_corpus(
            _single_file_corpus("bad.tgz", "bad.tgz", member="kftt/kyoto-dev.en"), dest, mirror=str(mirror)
        )
    assert sorted(p.name for p in dest.rglob("*")) == ["downloads"]


def _flaky_handler(
    payload: bytes, failures: int, times: list[float]
) -> type[http.server.BaseHTTPRequestHandler]:
    class Flaky(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            times.append(time.monotonic())
            if len(times) <= failures:
                self.send_error(503, "try again")
                return
            self.send_response(200)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, *args: object) -> None:
            pass

    return Flaky


def test_retries_with_bounded_exponential_backoff(tmp_path: Path, serve, real_data: RealData) -> None:
    payload = (real_data.file("multi30k/task1/pairs")).read_bytes()
    times: list[float] = []
    url = serve(_flaky_handler(payload, failures=2, times=times)) + "/pairs"
    remote = RemoteFile("pairs", (url,), sha256=hashlib.sha256(payload).hexdigest())
    result = fetch(remote, tmp_path, retries=4, backoff=0.05, max_backoff=0.08)
    assert result.path.read_bytes() == payload
    assert [a.outcome for a in result.attempts] == ["HTTP 503 try again", "HTTP 503 try again", "ok"]
    gaps = [later - earlier for earlier, later in itertools.pairwise(times)]
    assert len(times) == 3
    assert gaps[0] >= 0.05 and gaps[1] >= 0.08  # 0.05, then min(0.10, 0.08): doubled but capped
    assert max(gaps) < 1.0


def test_retries_are_bounded(tmp_path: Path, serve) -> None:
    times: list[float] = []
    url = serve(_flaky_handler(b"", failures=100, times=times)) + "/x"
    with pytest.raises(MissingResourceError) as error:
        fetch(RemoteFile("x", (url,)), tmp_path, retries=3, backoff=0.01)
    assert len(times) == 3
    assert str(error.value).count("HTTP 503") == 3


def test_mirror_is_tried_before_upstream(tmp_path: Path, serve, real_data: RealData) -> None:
    mirror = real_data("kftt/orig/kyoto-dev.en")
    upstream = serve(functools.partial(_Quiet, directory=str(mirror / "kftt/orig")))
    remote = RemoteFile(
        "kyoto-dev.en", (f"{upstream}/kyoto-dev.en",), mirror="not/in/the/mirror/kyoto-dev.en"
    )
    result = fetch(remote, tmp_path / "downloads", mirror=str(mirror))
    assert [a.source for a in result.attempts] == [
        str(mirror / "not/in/the/mirror/kyoto-dev.en"),
        f"{upstream}/kyoto-dev.en",
    ]
    assert result.attempts[0].outcome == "not found" and result.source == f"{upstream}/kyoto-dev.en"


def test_unreachable_upstream_error_names_mirror_and_upstream(tmp_path: Path) -> None:
    # sacreBLEU's filtered wmt14 (2737 lines) is not mirrored; upstream cannot be reached here
    mirror = tmp_path / "mirror"
    with pytest.raises(MissingResourceError) as error:
        download_corpus("wmt14:en-de", tmp_path / "dest", mirror=str(mirror), retries=1, timeout=5)
    message = str(error.value)
    assert f"mirror {mirror}" in message
    assert "https://statmt.org/wmt14/test-filtered.tgz" in message


def test_registration_gated_corpus_says_where_to_get_and_put_it(tmp_path: Path) -> None:
    with pytest.raises(MissingResourceError) as error:
        download_corpus("rwth_deen_align", tmp_path, mirror=str(tmp_path / "mirror"))
    message = str(error.value)
    assert "https://www-i6.informatik.rwth-aachen.de/goldAlignment/" in message
    assert str(tmp_path / "downloads" / "DeEnGoldAlignment.tar.gz") in message


def test_cli_download_and_list(
    tmp_path: Path, real_data: RealData, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["download", "--list"]) == 0
    listing = capsys.readouterr().out
    for name in ("multi30k", "wmt14:en-de", "wmt14/full:en-de", "europarl_v7_csen", "aspec_enja"):
        assert f"\n{name} " in "\n" + listing
    dest = tmp_path / "ali"
    mirror = real_data.corpus("hansards_enfr_align")
    assert main(["download", "hansards_enfr_align", "--dest", str(dest), "--mirror", str(mirror)]) == 0
    assert len((dest / "test.align").read_text(encoding="utf-8").splitlines()) == 447
    assert main(["download", "czeng", "--dest", str(dest)]) == 2
    assert "unknown corpus 'czeng'" in capsys.readouterr().err


def test_wmt_training_archives_come_from_a_sites_mirror(tmp_path: Path) -> None:
    """The WMT training archives have a mirror path (wmt/training/<archive>): a site's copy, or the
    scale rehearsal's generated corpus, is used without reaching statmt.org. The extracted training
    text is the archives' members, concatenated in catalogue order."""
    mirror = tmp_path / "mirror" / "wmt" / "training"
    mirror.mkdir(parents=True)
    members = {
        "training-parallel-europarl-v7.tgz": "training/europarl-v7.de-en.{lang}",
        "training-parallel-commoncrawl.tgz": "commoncrawl.de-en.{lang}",
        "training-parallel-nc-v9.tgz": "training/news-commentary-v9.de-en.{lang}",
    }
    expected = {"en": "", "de": ""}
    for archive, member in members.items():
        with tarfile.open(mirror / archive, "w:gz") as tar:
            for lang in ("en", "de"):
                text = f"{archive} {lang} line one\n{archive} {lang} line two\n"
                expected[lang] += text
                info = tarfile.TarInfo(member.format(lang=lang))
                info.size = len(text.encode())
                tar.addfile(info, io.BytesIO(text.encode()))
    out = tmp_path / "raw"
    manifest = download_corpus("wmt14_ende", out, mirror=str(tmp_path / "mirror"), retries=1)
    assert all(s["source"].startswith(str(tmp_path / "mirror")) for s in manifest["sources"])
    for lang in ("en", "de"):
        assert (out / f"train.{lang}").read_text(encoding="utf-8") == expected[lang]
