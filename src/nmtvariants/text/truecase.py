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
        try:
            self._impl = MosesTruecaser(load_from=str(path))
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
