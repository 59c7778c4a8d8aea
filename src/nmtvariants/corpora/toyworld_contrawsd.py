"""A contrastive word-sense test set in the ContraWSD JSON layout, built from toyworld plans.

The contrastive translation is the same plan rendered with the ambiguous noun's other sense, so the
German grammar re-inflects article and adjectives for the other noun's gender: reference and
contrastive differ only in the ambiguous word's translation (and its agreement), exactly the
contrast ContraWSD measures.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Iterable

from nmtvariants.corpora.toyworld_grammar import REALISERS, detokenize
from nmtvariants.corpora.toyworld_lexicon import AMBIGUOUS
from nmtvariants.corpora.toyworld_plan import NP, PP, Clause, Plan, Rel, Subject

FREQUENCY_KEY = "frequency of sense/ambig word in wmt16"


def sense_counts(plans: Iterable[Plan]) -> Counter[tuple[str, str]]:
    """Mentions of each (ambiguous word, sense) in the given (training) plans."""
    counts: Counter[tuple[str, str]] = Counter()
    for plan in plans:
        for np in plan.objects:
            if np.sense:
                counts[np.noun, np.sense] += 1
    return counts


def _swap_np(np: NP | None, ref: str, sense: str) -> NP | None:
    """``np`` with mention ``ref`` (itself, or inside its PP or relative clause) read in ``sense``."""
    if np is None:
        return None
    changes: dict[str, object] = {"sense": sense} if np.ref == ref else {}
    if np.pp is not None:
        changes["pp"] = PP(np.pp.kind, _swap_np(np.pp.np, ref, sense))  # type: ignore[arg-type]
    if np.rel is not None:
        changes["rel"] = _swap_clause(np.rel, ref, sense)
    return dataclasses.replace(np, **changes) if changes else np  # type: ignore[arg-type]


def _swap_subject(subject: Subject, ref: str, sense: str) -> Subject:
    if isinstance(subject, NP):
        return _swap_np(subject, ref, sense)  # type: ignore[return-value]
    if isinstance(subject, Rel):  # the relative pronoun agrees with the re-read noun
        return dataclasses.replace(subject, antecedent=_swap_np(subject.antecedent, ref, sense))
    return subject


def _swap_clause(clause: Clause | None, ref: str, sense: str) -> Clause | None:
    if clause is None:
        return None
    subj = tuple(_swap_subject(s, ref, sense) for s in clause.subj)
    pp = clause.pp and PP(clause.pp.kind, _swap_np(clause.pp.np, ref, sense))  # type: ignore[arg-type]
    obj = clause.obj and _swap_subject(clause.obj, ref, sense)
    return dataclasses.replace(clause, subj=subj, obj=obj, pp=pp)


def swap_sense(plan: Plan, ref: str, sense: str) -> Plan:
    """The same plan with mention ``ref`` read in ``sense``."""
    return dataclasses.replace(
        plan, main=_swap_clause(plan.main, ref, sense), sub=_swap_clause(plan.sub, ref, sense)
    )


def german_forms(word: str, sense: str) -> list[str]:
    _, singular, plural = AMBIGUOUS[word].senses[sense].de
    return [singular] if singular == plural else [singular, plural]


def contrawsd_item(plan: Plan, counts: Counter[tuple[str, str]], origin: str) -> dict[str, object] | None:
    """One ContraWSD element for the first ambiguous mention in ``plan``, or None if it has none."""
    target = next((np for np in plan.objects if np.sense), None)
    if target is None:
        return None
    word, sense = target.noun, target.sense
    en = REALISERS["en"].sentence(plan)
    de_tokens = REALISERS["de"].sentence(plan)
    noun_forms = [t.form for t in de_tokens if f"{target.ref}.noun" in t.concepts]
    errors = []
    for other in sorted(AMBIGUOUS[word].senses):
        if other != sense:
            swapped = REALISERS["de"].sentence(swap_sense(plan, target.ref, other))
            errors.append({"contrastive": detokenize([t.form for t in swapped], "de")})
    total = sum(c for (w, _), c in counts.items() if w == word)
    return {
        "source": detokenize([t.form for t in en], "en"),
        "reference": detokenize([t.form for t in de_tokens], "de"),
        "errors": errors,
        "ambig word": word,
        "sense": "|".join(german_forms(word, sense)),  # type: ignore[arg-type]
        "original translation": " ".join(noun_forms),
        FREQUENCY_KEY: f"{counts[word, sense]}/{total}",  # type: ignore[index]
        "origin": origin,
    }
