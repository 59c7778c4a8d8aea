"""Real data for the tests, obtained as a user obtains it: through the project's download catalogue.

Tests name the files they need by their path in the mirror layout (``shared/data``, e.g.
``wmt/en-de/newstest2014.de.gz``). :class:`RealData` puts each into a cache folder laid out the same
way, checked against its pinned sha256, trying in turn:

1. the cache itself (a copy whose sha256 no longer matches is discarded);
2. the mirrors: ``$NMTV_MIRROR`` (a folder or URL prefix) and ``../shared/data`` beside the checkout;
3. upstream: the URL of the same bytes in the catalogue, the URL of the same content when the
   mirror stores it recompressed, or the catalogued corpus whose upstream recipe extracts it
   (``nmtvariants download``).

Fetching goes through :func:`nmtvariants.corpora.download.fetch` and ``download_corpus``, so the
tests exercise the same code as the workflow's download rule. A file that no source can give fails
the test with one line per missing file saying where it comes from; nothing is skipped.

A few files the pipeline never downloads (Moses-tokenised Multi30k references, FLORES, UD PUD) are
pinned in :data:`TEST_ONLY`, with the sha256 values from ``shared/data/README.md``.
"""

from __future__ import annotations

import gzip
import hashlib
import os
import shutil
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from nmtvariants.corpora.catalogue import MIRROR_SHA256, RemoteFile, get_corpus, list_corpora
from nmtvariants.corpora.download import download_corpus, fetch, sha256_of
from nmtvariants.errors import NMTVariantsError
from nmtvariants.fileio import atomic_write

MIRROR_ENV = "NMTV_MIRROR"
CACHE_ENV = "NMTV_TEST_DATA"

_MULTI30K = (
    "https://raw.githubusercontent.com/multi30k/dataset/a3d2e0d26b56f3846f66a952536ffed4e401d05a/data/task1"
)
_FLORES = (
    "https://raw.githubusercontent.com/Helsinki-NLP/OPUS-MT-testsets/ac0f19c0be3cb4e0d9450fcb2d7a9847c4bdd180"
    "/datasets/facebook/flores/flores200_dataset/devtest"
)
_PUD = (
    "https://raw.githubusercontent.com/UniversalDependencies/UD_{lang}-PUD/{commit}/{code}_pud-ud-test.conllu"
)
_CROSSALIGN = (
    "https://raw.githubusercontent.com/lisasiyu/Cross-Align/017ba1e044413a66d53b99bfcfe5ec89098e2da3"
)


@dataclass(frozen=True)
class Source:
    """Where one mirror-layout file comes from.

    ``sha256`` pins the file as stored in the mirror; ``content_sha256`` pins the uncompressed bytes
    of a ``.gz`` that the mirror recompressed (upstream serves them plain). ``url`` serves the stored
    bytes (or, with ``content_sha256``, the plain content); ``corpus``/``output`` name a catalogued
    corpus whose upstream recipe extracts the same content.
    """

    relative: str
    sha256: str
    content_sha256: str | None = None
    url: str | None = None
    corpus: str | None = None
    output: str | None = None

    def origin(self) -> str:
        if self.url:
            return self.url + (" (plain; recompressed here)" if self.content_sha256 else "")
        if self.corpus:
            return f"`nmtvariants download {self.corpus}` (its {self.output})"
        return "the shared/data mirror only (no upstream copy is catalogued)"


def _tok(split: str, lang: str, stored: str, content: str) -> Source:
    name = f"{split}.lc.norm.tok.{lang}"
    return Source(f"multi30k/task1/tok/{name}.gz", stored, content, f"{_MULTI30K}/tok/{name}")


def _flores(name: str, stored: str) -> Source:
    return Source(f"flores200-devtest/{name}.devtest", stored, url=f"{_FLORES}/{name}.devtest")


def _pud(lang: str, code: str, commit: str, stored: str, content: str) -> Source:
    url = _PUD.format(lang=lang, commit=commit, code=code)
    return Source(f"ud-pud/UD_{lang}-PUD/{code}_pud-ud-test.conllu.gz", stored, content, url)


# sha256 of the file as stored in shared/data and of its uncompressed content (shared/data/README.md)
_TOK_PINS = {  # Multi30k task1/tok/{split}.lc.norm.tok.{lang}.gz
    ("train", "en"): (
        "79d990dd71713faec0e3165cbd3b60acdf6fe11cab2e37a28f374c6bdbb297ec",
        "08925f8e0572bcd5a006702fc5fe20e2d77c6917d4eebd576fc20de6693c2119",
    ),
    ("train", "de"): (
        "7e3392f03c0fe978165d22fb5eaf0d0b9b1d9c413283b5193f02d4cb27e50797",
        "cb5a23529b65ec2061f1dc446192a9c37382b63cc75f81a0be59d34894b3a505",
    ),
    ("train", "fr"): (
        "10438b7694a52af6164448c31198e9453b59a0d3b8a6715428722f0f8fbba2c0",
        "8fa41bb718412bcb7c5dfa58603842810a01543eae86a51279f9886b901266e1",
    ),
    ("train", "cs"): (
        "aedf722ac75d9b899e9c373b1a2467b7d0af3c970327620162d50570fb1ec982",
        "7645fb91efa18f94c83d493f740a5d5a941e4b01efa6a124bf2d4af040e133e0",
    ),
    ("val", "en"): (
        "2c7e5e9cf54ba0dff0cc4b84836d5a583f80ecaaab90b37a123d1376306215cd",
        "46573ce391ae227f1c72f873392436a20ef18e0a6d518098cfbd70b77c8572ec",
    ),
    ("val", "de"): (
        "006ad58fd6a2ad6502094160fe5273d93abf34a207967fdc69eafd7558b5ef39",
        "97232bd273eceb7207f689527386a97e4be2616b18ada47576bdaf96c8ae1f00",
    ),
    ("val", "fr"): (
        "78b89a01ca96bb9940c525ad5eb73c0028d3e5bfd90008886a22961afb8e8994",
        "b303e301aa21fe7822a846b2b3fb2d5a1121ec807cd5b1d006fb7b2b5507168a",
    ),
    ("val", "cs"): (
        "0a405dfbb948e4458978f2fc65058fcb885eec4ff3ff6a93aa23cf41fb4f23dd",
        "b87ee4917f4a0f9ca6cca03e402026c9f4437dc1bd6a7dadfd2544ecfb6c5501",
    ),
    ("test_2016_flickr", "en"): (
        "b95df925929cb222d0cf733f153bcbfba0f00180c85fd61dd5c4fb27f29ee394",
        "5b7f32627cf99eced828311b955dae9800bb52bc8b91cf8b6526829e605b29d2",
    ),
    ("test_2016_flickr", "de"): (
        "2628844bbb7783afa0ba8a9927f174aafeee715871aa8deed3af2c4d0b71a658",
        "c6a33d39d48f9f510de147651316cd9d918e09ad0219df734a2f16b6baccacc4",
    ),
    ("test_2016_flickr", "fr"): (
        "97b9b377d15dfc98e55e270dda3d6c91f8df02a5cf9e682457f6c59bd6be00db",
        "1463bd5960f9bfe098ec3cd752d3df0c49c84dc646fb518964a29232658cd836",
    ),
    ("test_2016_flickr", "cs"): (
        "8e46fba6274766d8e55a0f6f28395d8948baab3cfeda729a7edaab8aa81a549d",
        "748c8816de928732365176e5c5d2f9bbabcec9b8d4448fba2d230feb057898a7",
    ),
    ("test_2017_flickr", "en"): (
        "6f015edf8eea8e5bff43d65e1743b2572577756b671a203651ccce508e787c35",
        "c9d1dfd7a26add989382e534af235af9f0f658b2a30e7eb0efdaf142496ee54f",
    ),
    ("test_2017_flickr", "de"): (
        "aa48934689a0fac1f506d19878ef9f48d823b2f1655bd3db5018f533cc0b2111",
        "02067e4a9402786a4fcb8c1b6f4307e4a5073ced64800abead5273b54f5f31f6",
    ),
    ("test_2017_flickr", "fr"): (
        "d9905df4ff42d30afbf2affdfe4ebfc3700d3b468f56746e69c3a0f8a1d0ddc1",
        "c0583117a47b31e8a6c6a97cfe8de153e462074668f4e994764fcc80b21d33b4",
    ),
    ("test_2017_mscoco", "en"): (
        "547d290e8b81097e8a307b1ef5b6ce7ff29fed52ae63a779a45bd4cc739f67c2",
        "fe69ae004d71c42ead0301e70c57de5b1b6b5fb7f52210d42b22801e98e656f3",
    ),
    ("test_2017_mscoco", "de"): (
        "41d547d42224fd190b5ea169a18a840e9625bb7844d4255008e2400597275580",
        "e2825990b8a4e5289d2cdba801d57c187810bab9b4f5d87a30c35800a0d871b6",
    ),
    ("test_2017_mscoco", "fr"): (
        "32a29bc523f0d5446e792de90dec9f7874fdc14a917a783f8e9a1ab06f52abfd",
        "0b6a4620f02b6b9acf7811fda23f90fed9c6baa0b96aa224db50a273078c84d1",
    ),
    ("test_2018_flickr", "en"): (
        "6942a488ee2f67a37c7a838ac456addc402a1ba61448c4da317b1bacc9b648eb",
        "a66e25cbb8323d74a40873dcd222659f39e30ee7687a6ed5445833aed0673239",
    ),
    ("test_2018_flickr", "de"): (
        "87b950eb1b484c97882d29e1ffceec68568d6a4b2bf72b1e7f9cdd62e3e37e90",
        "45ce6b121708adf538d3a8c71dc1acbcb1e0f2bca74ace8e58652f9ea5b96335",
    ),
    ("test_2018_flickr", "fr"): (
        "6f33d23fcc44cc3f7ec2b5058e0dcc0b0efc14de01082a37175488073f185eee",
        "22d44a4ba21e050f218399f2c4f9e1a36875f209820c1f1c9af5b76a2947a71c",
    ),
    ("test_2018_flickr", "cs"): (
        "7037cd1596c1f337c78297ecc9b2a2df297d00d5ec530a214254c071fdbe344e",
        "09a4987a524dea4852ccfef35329281b2cd577780691b732341ccecc4015aa4c",
    ),
}
_FLORES_PINS = {
    "eng_Latn": "612e9fbe87997617c0fa8fa8929654a4f49b728d96738112c2b86ef6a1d78d88",
    "rus_Cyrl": "cdc706ed862d1d35d8d67cfda0b396766646885434958b18291aa760ff1bb59e",
    "zho_Hans": "b30158b1b76f7cee08530d8127a9769f4512597c7eefe97ae1ccf630d5b6e7fd",
}
_PUD_PINS = {  # language: (code, UD repository commit, stored, content)
    "English": (
        "en",
        "f16eba4ae7f3d161870ed320676c5088b8fa476c",
        "9f5d22faed24d5c7d98f77e773727455407895755f32806f207ede41343f6748",
        "c80584f2bc2b31d5bada78a1136f9feec7ac49e5e18898db02dea434b5b8f0aa",
    ),
    "German": (
        "de",
        "ff80846ae60a0a70fc4d6251ef73e6a483a620ee",
        "a106d715a3be3812dcda09ee70af5b5119f06762b0c5b07e92e5064d18aedb4d",
        "a530bdb50349bbd7c13706b6a759a9d73e8f514fff41fbf27149e914b0c3e723",
    ),
    "Russian": (
        "ru",
        "da5b3816eeaa24283c1d81a48bb1de4d062fc5d5",
        "6a478c9e42057aa998865ec63c23d5708d29512e734ecdc577d9e24c91bd2efb",
        "a37e076d24f0c3cfd5d48a11bbfec36026da5dc46180b7a12dc991dc372de1ea",
    ),
}
_HANSARDS_BARS = "alignments/en-fr-hansards-naacl2003/crossalign.test.en-fr"

TEST_ONLY: dict[str, Source] = {
    source.relative: source
    for source in (
        *(_tok(split, lang, *pins) for (split, lang), pins in _TOK_PINS.items()),
        *(_flores(name, pin) for name, pin in _FLORES_PINS.items()),
        *(_pud(lang, *pins) for lang, pins in _PUD_PINS.items()),
        Source(
            "multi30k/task1/pairs",
            "af67802b7acc11b84d83f60d2235cbb803e89076d8ad5aa6e63986a840e09fb3",
            url=f"{_MULTI30K}/pairs",
        ),
        Source(_HANSARDS_BARS, MIRROR_SHA256[_HANSARDS_BARS][0], url=f"{_CROSSALIGN}/data/test.en-fr"),
    )
}


def catalogue_source(relative: str) -> Source | None:
    """What the download catalogue knows about a mirror-layout path (None: not catalogued)."""
    if relative not in MIRROR_SHA256:
        return None
    stored, content = MIRROR_SHA256[relative]
    url = corpus = output = None
    for entry in list_corpora():
        for recipe in (entry.recipe, entry.mirror_recipe):
            if recipe is None:
                continue
            for remote in recipe.files:
                if remote.urls and remote.mirror == relative and remote.sha256 == stored:
                    return Source(relative, stored, url=remote.urls[0])
                if remote.urls and content is not None and remote.sha256 == content:
                    url = remote.urls[0]
        if entry.mirror_recipe is not None and corpus is None:
            names = {remote.name for remote in entry.mirror_recipe.files if remote.mirror == relative}
            outputs = [extract.output for extract in entry.mirror_recipe.extracts if extract.file in names]
            if outputs and not entry.gated:
                corpus, output = entry.name, outputs[0]
    if url:
        return Source(relative, stored, content, url=url)
    return Source(relative, stored, content, corpus=corpus, output=output)


def describe(relative: str, extra: dict[str, Source] | None = None) -> Source | None:
    return (extra or {}).get(relative) or TEST_ONLY.get(relative) or catalogue_source(relative)


class DataUnavailable(AssertionError):
    """No source could give a file the tests need: a test failure (never a skip) saying why."""


def _content_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with gzip.open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _valid(path: Path, source: Source) -> bool:
    if not path.is_file():
        return False
    if sha256_of(path) == source.sha256:
        return True
    if source.content_sha256 is None:
        return False
    try:
        return _content_sha256(path) == source.content_sha256
    except (OSError, EOFError):
        return False


def _store_plain_content(plain: Path, target: Path) -> None:
    """Copy upstream's plain bytes to ``target``; atomic_write gzips (deterministically) a ``.gz``."""
    with open(plain, "rb") as source, atomic_write(target, "wb") as out:
        shutil.copyfileobj(source, out)


class RealData:
    """The test-data cache: ``data("a", "b")`` makes sure both files are present and returns its root.

    ``mirrors`` are tried in order before ``upstream`` (network) sources; ``extra`` adds
    :class:`Source` entries (the fixture's own tests use it).
    """

    def __init__(
        self,
        cache: Path,
        mirrors: Iterable[str],
        *,
        upstream: bool = True,
        extra: dict[str, Source] | None = None,
        timeout: float = 30.0,
    ) -> None:
        self.cache = Path(cache)
        self.mirrors = list(mirrors)
        self.upstream = upstream
        self.extra = dict(extra or {})
        self.timeout = timeout

    @classmethod
    def from_environment(cls, repo: Path) -> RealData:
        cache = os.environ.get(CACHE_ENV) or str(
            Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "nmtvariants" / "test-data"
        )
        mirrors = [os.environ[MIRROR_ENV]] if os.environ.get(MIRROR_ENV) else []
        beside = repo.parent / "shared" / "data"
        if beside.is_dir():
            mirrors.append(str(beside))
        return cls(Path(cache), mirrors)

    def __call__(self, *relatives: str) -> Path:
        problems = []
        for relative in relatives:
            try:
                self.file(relative)
            except DataUnavailable as error:
                problems.append(str(error))
        if problems:
            raise DataUnavailable("\n".join(problems))
        return self.cache

    def corpus(self, name: str) -> Path:
        """Every mirror-layout file of a catalogued corpus (so that the cache can serve as its mirror)."""
        corpus = get_corpus(name)
        recipe = corpus.mirror_recipe or corpus.recipe
        return self(*(remote.mirror for remote in recipe.files if remote.mirror))

    def file(self, relative: str) -> Path:
        source = describe(relative, self.extra)
        if source is None:
            raise DataUnavailable(
                f"{relative}: unknown test-data file: neither the download catalogue "
                "(nmtvariants.corpora.catalogue.MIRROR_SHA256) nor tests/data_sources.py TEST_ONLY pins it"
            )
        target = self.cache / relative
        if _valid(target, source):
            return target
        if target.exists():
            target.unlink()
        attempts: list[str] = []
        for get in (self._from_mirrors, self._from_url, self._from_corpus):
            if get(source, target, attempts):
                if _valid(target, source):
                    return target
                attempts.append(f"{get.__name__.removeprefix('_from_')}: content differs from the pin")
                target.unlink()
        tried = "; ".join(attempts) or "no mirror configured and upstream downloads are off"
        raise DataUnavailable(
            f"{relative}: not available (tried: {tried}). It comes from {source.origin()}, "
            f"sha256 {source.sha256}. Put the shared/data mirror beside the checkout (../shared/data), "
            f"set {MIRROR_ENV} to a copy (folder or URL), or allow network access."
        )

    def _from_mirrors(self, source: Source, target: Path, attempts: list[str]) -> bool:
        remote = RemoteFile(target.name, mirror=source.relative, sha256=source.sha256)
        for mirror in self.mirrors:
            try:
                fetch(remote, target.parent, mirror=mirror, mirror_only=True, retries=1, timeout=self.timeout)
                return True
            except NMTVariantsError as error:
                attempts.append(f"mirror {mirror}: {error}")
        return False

    def _from_url(self, source: Source, target: Path, attempts: list[str]) -> bool:
        if not (self.upstream and source.url):
            return False
        if source.content_sha256 is None:
            remote = RemoteFile(target.name, urls=(source.url,), sha256=source.sha256)
            try:
                fetch(remote, target.parent, retries=1, timeout=self.timeout)
                return True
            except NMTVariantsError as error:
                attempts.append(f"upstream: {error}")
                return False
        plain = RemoteFile(target.name.removesuffix(".gz"), urls=(source.url,), sha256=source.content_sha256)
        target.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=target.parent) as tmp:
            try:
                fetched = fetch(plain, tmp, retries=1, timeout=self.timeout)
            except NMTVariantsError as error:
                attempts.append(f"upstream: {error}")
                return False
            _store_plain_content(fetched.path, target)
        return True

    def _from_corpus(self, source: Source, target: Path, attempts: list[str]) -> bool:
        if not (self.upstream and source.corpus and source.output):
            return False
        target.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=target.parent) as tmp:
            try:
                download_corpus(source.corpus, tmp, retries=1, timeout=self.timeout)
            except NMTVariantsError as error:
                attempts.append(f"upstream corpus {source.corpus}: {error}")
                return False
            _store_plain_content(Path(tmp) / source.output, target)
        return True
