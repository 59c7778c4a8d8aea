"""METEOR (NLTK, offline through Debian's WordNet 3.0) and RIBES (NLTK's port of RIBES 1.03.1).

NLTK downloads WordNet from the internet, which these machines cannot reach. Debian's
``wordnet-base`` + ``wordnet-sense-index`` packages carry the same WordNet 3.0 files; NLTK reads them
once they are *copied* (a symlink is refused as an "unauthorized path") into
``<nltk_data>/corpora/wordnet`` together with a ``lexnames`` file that Debian ships only as a man page.
:func:`prepare_wordnet` does exactly that (conventions-and-feasibility.md A7).

Both metrics need tokens. We tokenise with the same sacreBLEU tokenizer as BLEU for the target
language (``13a``, ``zh``, ``ja-mecab``), so the three numbers agree on what a word is. The corpus
scores are the mean of sentence scores: RIBES defines its corpus score that way; for METEOR this
differs from MultEval's Meteor 1.5 (which pools statistics) and the JSON says so.
"""

from __future__ import annotations

import gzip
import os
import re
import shutil
import warnings
from collections.abc import Callable, Sequence
from importlib.metadata import version
from pathlib import Path
from typing import Any

from nmtvariants.errors import MissingResourceError
from nmtvariants.evaluation.bleu import check_tokenizer, default_tokenizer
from nmtvariants.evaluation.meteor15 import NLTK_METEOR_LABEL
from nmtvariants.fileio import PathLike, atomic_write

DEBIAN_WORDNET_DIR = Path("/usr/share/wordnet")
LEXNAMES_MAN_PAGE = Path("/usr/share/man/man5/lexnames.5WN.gz")
NLTK_DATA_ENV = "NMTVARIANTS_NLTK_DATA"
DEFAULT_NLTK_DATA = Path("~/.cache/nmtvariants/nltk_data")
WORDNET_FILES = [f"{kind}.{pos}" for kind in ("data", "index") for pos in ("adj", "adv", "noun", "verb")]
WORDNET_FILES += [f"{pos}.exc" for pos in ("adj", "adv", "noun", "verb")] + ["index.sense"]
INSTALL_HINT = "apt-get install wordnet-base wordnet-sense-index"

# WordNet 3.0 lexicographer files (lexnames(5WN)); used when the man page is not installed
# (slim images drop /usr/share/man). A test checks it against the man page.
LEXNAMES_WN30 = [
    "adj.all",
    "adj.pert",
    "adv.all",
    "noun.Tops",
    "noun.act",
    "noun.animal",
    "noun.artifact",
    "noun.attribute",
    "noun.body",
    "noun.cognition",
    "noun.communication",
    "noun.event",
    "noun.feeling",
    "noun.food",
    "noun.group",
    "noun.location",
    "noun.motive",
    "noun.object",
    "noun.person",
    "noun.phenomenon",
    "noun.plant",
    "noun.possession",
    "noun.process",
    "noun.quantity",
    "noun.relation",
    "noun.shape",
    "noun.state",
    "noun.substance",
    "noun.time",
    "verb.body",
    "verb.change",
    "verb.cognition",
    "verb.communication",
    "verb.competition",
    "verb.consumption",
    "verb.contact",
    "verb.creation",
    "verb.emotion",
    "verb.motion",
    "verb.perception",
    "verb.possession",
    "verb.social",
    "verb.stative",
    "verb.weather",
    "adj.ppl",
]
_READERS: dict[str, Any] = {}
_SYNTACTIC_CATEGORY = {"noun": 1, "verb": 2, "adj": 3, "adv": 4}


def nltk_data_dir(path: PathLike | None = None) -> Path:
    """The NLTK data folder: the argument, else ``$NMTVARIANTS_NLTK_DATA``, else ~/.cache/..."""
    chosen = path or os.environ.get(NLTK_DATA_ENV) or DEFAULT_NLTK_DATA
    return Path(chosen).expanduser()


def lexnames_lines(man_page: Path = LEXNAMES_MAN_PAGE) -> list[str]:
    """``NN<TAB>name<TAB>syncat`` lines, from the man page if present, else the built-in table."""
    names: list[str] = []
    if man_page.is_file():
        with gzip.open(man_page, "rt", encoding="utf-8", errors="replace") as handle:
            for line in handle:
                match = re.match(r"^(\d{2})\s+(\S+)", line)
                if match:
                    names.append(match.group(2))
    if not names:
        names = list(LEXNAMES_WN30)
    return [f"{i:02d}\t{name}\t{_SYNTACTIC_CATEGORY[name.split('.')[0]]}" for i, name in enumerate(names)]


def prepare_wordnet(data_dir: PathLike | None = None, wordnet_dir: PathLike = DEBIAN_WORDNET_DIR) -> Path:
    """Copy Debian's WordNet into ``<data_dir>/corpora/wordnet`` (once) and return ``data_dir``."""
    root = nltk_data_dir(data_dir)
    target = root / "corpora" / "wordnet"
    if all((target / name).is_file() for name in [*WORDNET_FILES, "lexnames"]):
        return root
    source = Path(wordnet_dir)
    missing = [name for name in WORDNET_FILES if not (source / name).is_file()]
    if missing:
        raise MissingResourceError(
            f"WordNet 3.0 files not found in {source} (missing {', '.join(missing[:3])}...); "
            f"METEOR needs them offline: {INSTALL_HINT}"
        )
    target.mkdir(parents=True, exist_ok=True)
    for name in WORDNET_FILES:
        with open(source / name, "rb") as src, atomic_write(target / name, "wb") as dst:
            shutil.copyfileobj(src, dst)
    with atomic_write(target / "lexnames") as out:
        out.write("\n".join(lexnames_lines()) + "\n")
    return root


def english_wordnet_reader() -> type:
    """NLTK's WordNetCorpusReader without the map from WordNet 3.0 onto the loaded version.

    The reader builds that map (``map30``) at start-up for the Open Multilingual Wordnet, which
    METEOR does not use (``omw_reader`` is None); building it parses ``index.sense`` twice, about
    half of a METEOR scoring job's seconds (py-spy, 2026-11-26). Nothing else reads the map.
    """
    from nltk.corpus.reader.wordnet import WordNetCorpusReader

    class EnglishWordNetReader(WordNetCorpusReader):
        def map_wn(self, version: str = "wordnet") -> None:
            return None

    return EnglishWordNetReader


def load_wordnet(data_dir: PathLike | None = None, wordnet_dir: PathLike = DEBIAN_WORDNET_DIR) -> Any:
    """A WordNetCorpusReader on the prepared folder (without the OMW map: english_wordnet_reader).

    NLTK >= 3.10 only reads corpora under a folder listed in ``nltk.data.path``, so the folder is
    appended there (the one piece of global NLTK state we touch).
    """
    import nltk

    root = prepare_wordnet(data_dir, wordnet_dir).resolve()
    if str(root) in _READERS:  # parsing WordNet takes seconds; one reader per folder and process
        return _READERS[str(root)]
    if str(root) not in nltk.data.path:
        nltk.data.path.append(str(root))
    with warnings.catch_warnings():  # "multilingual functions are not available": no OMW, as intended
        warnings.simplefilter("ignore", UserWarning)
        reader = english_wordnet_reader()(str(root / "corpora" / "wordnet"), None)
    _READERS[str(root)] = reader
    return reader


def token_splitter(lang: str, tokenize: str | None = None) -> Callable[[str], list[str]]:
    """Split a line into tokens with the sacreBLEU tokenizer used for BLEU on this language."""
    from sacrebleu.metrics import BLEU

    name = tokenize or default_tokenizer(lang)
    check_tokenizer(name)
    tokenizer = BLEU(tokenize=name).tokenizer
    return lambda line: tokenizer(line.rstrip()).split()


def meteor(
    hyps: Sequence[str],
    refs: Sequence[Sequence[str]],
    lang: str = "en",
    tokenize: str | None = None,
    data_dir: PathLike | None = None,
    wordnet_dir: PathLike = DEBIAN_WORDNET_DIR,
) -> dict[str, Any]:
    """Mean sentence METEOR (NLTK defaults alpha 0.9, beta 3, gamma 0.5; lowercased; WordNet synonyms)."""
    from nltk.translate.meteor_score import meteor_score

    wordnet = load_wordnet(data_dir, wordnet_dir)
    split = token_splitter(lang, tokenize)
    total = 0.0
    for index, hyp in enumerate(hyps):
        total += meteor_score([split(ref[index]) for ref in refs], split(hyp), wordnet=wordnet)
    score = 100.0 * total / max(len(hyps), 1)
    record: dict[str, Any] = {
        "name": NLTK_METEOR_LABEL,
        "score": score,
        "signature": f"nltk-meteor|wordnet:{wordnet.get_version()}|tok:{tokenize or default_tokenizer(lang)}"
        "|alpha:0.9|beta:3.0|gamma:0.5|case:lc|corpus:mean-of-sentences",
        "implementation": f"nltk.translate.meteor_score.meteor_score, nltk {version('nltk')}",
        "wordnet": f"WordNet {wordnet.get_version()} from Debian ({INSTALL_HINT})",
    }
    if lang.lower().split("-")[0] != "en":
        record["note"] = (
            "NLTK METEOR stems (Porter) and synonyms (WordNet) are English; on this target language "
            "they add few, possibly spurious matches (Meteor 1.5 has per-language modules)"
        )
    return record


def ribes(
    hyps: Sequence[str],
    refs: Sequence[Sequence[str]],
    lang: str = "ja",
    tokenize: str | None = None,
    alpha: float = 0.25,
    beta: float = 0.10,
) -> dict[str, Any]:
    """Corpus RIBES (mean of best-reference sentence RIBES), RIBES.py 1.03.1 defaults alpha .25, beta .10."""
    from nltk.translate.ribes_score import corpus_ribes

    split = token_splitter(lang, tokenize)
    references = [[split(ref[index]) for ref in refs] for index in range(len(hyps))]
    score = corpus_ribes(references, [split(hyp) for hyp in hyps], alpha=alpha, beta=beta)
    return {
        "score": 100.0 * float(score),
        "signature": f"nltk-ribes|tok:{tokenize or default_tokenizer(lang)}|alpha:{alpha}|beta:{beta}",
    }
