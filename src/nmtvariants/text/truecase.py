"""Moses truecasing through sacremoses: train on tokenised training text, apply to every split, undo.

Moses' ``truecase.perl`` keeps a word unchanged when that exact surface form was seen in training
("known") and only otherwise replaces it by its most frequent casing; sentence-initial words always
take the most frequent casing. sacremoses reproduces that only with ``use_known=True`` (its default,
False, recases every known word to the most frequent form, which e.g. turns a seen "Apple" into
"apple"), so `Truecaser` always passes ``use_known=True``.

``undo`` is ``detruecase.perl``: upper-case the first letter at each sentence start.
"""

from __future__ import annotations

import logging
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from sacremoses import MosesDetruecaser, MosesTruecaser

from nmtvariants.errors import InputError, MissingResourceError
from nmtvariants.fileio import PathLike, atomic_write

log = logging.getLogger(__name__)


def train_truecaser(
    lines: Iterable[str], model_path: PathLike, *, possibly_use_first_token: bool = False
) -> int:
    """Learn casing statistics from tokenised ``lines`` and write a Moses truecase model.

    Returns the number of lower-cased types in the model. The model file has the format of
    ``train-truecaser.perl`` (``word (count/total) variant (count) ...``) and is written atomically.
    """
    truecaser = MosesTruecaser()
    # sacremoses' own train() collects every token's weight of the corpus in one list before counting
    # (`chain(*...)`): ~17 GB for WMT14 EN-DE's 4.5M lines. The same per-sentence weights
    # (learn_truecase_weights), counted as they come, keep only the counts: memory grows with the
    # word types, not the tokens.
    casing: defaultdict[str, Counter] = defaultdict(Counter)
    for line in lines:
        weights = truecaser.learn_truecase_weights(
            line.split(), possibly_use_first_token=possibly_use_first_token
        )
        for lowercase, surface, weight in weights:
            casing[lowercase][surface] += weight
    with atomic_write(model_path) as out:
        # sacremoses' own save writes beside the target too, but we keep one atomic-write path for
        # every output of the pipeline; the format is sacremoses' (= Moses') writer.
        truecaser._write_casing(casing, out)
    log.info("truecase model %s: %d types", model_path, len(casing))
    return len(casing)


# Model lines turned into sacremoses' model at a time. sacremoses' own loader builds a Counter for
# every type of the file and keeps them beside the model (510 MB of peak RSS for WMT14 EN-DE's 1.1M
# English types, where the model it applies, `best` and `known`, takes 220 MB), and refuses a model
# of over 2M types (`MAX_MODEL_ENTRIES`, a bound for untrusted files), which a WMT14 EN-FR side
# reaches by Heaps' law (1.1M types at 4.5M lines, 0.37M at 0.45M).
MODEL_CHUNK_LINES = 10_000


def _parse_casing_line(path: Path, number: int, line: str, casing: defaultdict[str, Counter]) -> None:
    """One ``word (count/total) variant (count) ...`` line into ``casing``, as sacremoses reads it."""
    fields = line.split()
    if len(fields) % 2:
        raise InputError(
            f"{path}:{number}: odd number of fields (expected 'word (count)' pairs): "
            "not a Moses truecase model; retrain it"
        )
    for token, count in zip(fields[::2], fields[1::2], strict=True):
        try:
            casing[token.lower()][token] = int(count.split("/")[0].strip("()"))
        except ValueError:
            raise InputError(
                f"{path}:{number}: count {count!r} is not an integer: not a Moses truecase model; retrain it"
            ) from None


def load_truecase_model(path: Path, impl: MosesTruecaser) -> dict:
    """sacremoses' model (``best`` and ``known``) of a Moses truecase model file, converted by
    sacremoses' own ``_casing_to_model`` MODEL_CHUNK_LINES lines at a time, so that only one chunk's
    counts are held (see MODEL_CHUNK_LINES). Moses and sacremoses write one line per lower-cased type;
    a file that spreads one type over lines that fall in two chunks is loaded whole by sacremoses,
    whose merging it then needs."""
    best: dict[str, str] = {}
    known: Counter = Counter()
    casing: defaultdict[str, Counter] = defaultdict(Counter)

    def convert() -> bool:
        chunk = impl._casing_to_model(casing)
        if not best.keys().isdisjoint(chunk["best"]):
            return False
        best.update(chunk["best"])
        known.update(chunk["known"])
        casing.clear()
        return True

    with path.open(encoding="utf-8") as lines:
        for number, line in enumerate(lines, 1):
            _parse_casing_line(path, number, line, casing)
            if len(casing) >= MODEL_CHUNK_LINES and not convert():
                break
        else:
            if convert():
                return {"best": best, "known": known}
    log.info("%s: a type on lines in two chunks; loading it whole", path)
    return MosesTruecaser(load_from=str(path)).model


@dataclass
class Truecaser:
    """``truecase.perl --model M``: a picklable line step for `sharding`."""

    model_path: PathLike
    _impl: MosesTruecaser = field(init=False, repr=False)

    def __post_init__(self) -> None:
        path = Path(self.model_path)
        if not path.is_file():
            raise MissingResourceError(
                f"{path}: truecase model not found; train it first with "
                f"`nmtvariants truecase train --model {path} TRAIN.tok`"
            )
        self._impl = MosesTruecaser()
        try:
            self._impl.model = load_truecase_model(path, self._impl)
        except (ValueError, UnicodeDecodeError) as error:
            raise InputError(f"{path}: not a Moses truecase model ({error}); retrain it") from None

    def __call__(self, line: str) -> str:
        return self._impl.truecase(line, return_str=True, use_known=True)


@dataclass
class Detruecaser:
    """``detruecase.perl``: capitalise sentence starts (``is_headline`` title-cases as Moses does)."""

    is_headline: bool = False
    _impl: MosesDetruecaser = field(init=False, repr=False, default_factory=MosesDetruecaser)

    def __call__(self, line: str) -> str:
        return self._impl.detruecase(line, is_headline=self.is_headline, return_str=True)
