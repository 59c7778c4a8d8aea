"""Universal POS tags for the target-side tokens (German, Russian, French), for decoder-side analyses.

Target tokens carry the plan concepts they express (``m.subj.noun``, ``m.pp.rel``, ...), and the
concept's last part is the token's role in the sentence, which decides its UD part of speech for all
open-class words. Closed-class words that fill a role with several words of different kinds (German
"links neben", Russian "рядом с", French "il y a") are listed by form. Tokens whose tag the realiser
already knows (names, relative pronouns, the commas of relative clauses) keep it.

Conventions where a Moses token is a UD multiword token: German "zum"/"zur"/"vom" and French
"du" are ADP (their first part), a German material compound ("Holz-Ball") is NOUN, French "en bois"
is ADP NOUN and Russian "деревянный" ADJ.
"""

from __future__ import annotations

from collections.abc import Sequence

from nmtvariants.corpora.toyworld_grammar import Tok

# role -> tag, in priority order for a token that expresses several concepts ("zum": goal + det).
_ROLES: tuple[tuple[str, str], ...] = (
    ("noun", "NOUN"),
    ("verb", "VERB"),
    ("goal", "ADP"),
    ("from", "ADP"),
    ("prep", "ADP"),
    ("rel", "ADP"),
    ("at", "ADP"),
    ("det", "DET"),
    ("num", "NUM"),
    ("size", "ADJ"),
    ("colour", "ADJ"),
    ("quality", "ADJ"),
    ("material", "ADJ"),
    ("aux", "AUX"),
    ("cop", "AUX"),
    ("prt", "ADP"),
    ("exist", "VERB"),
    ("unit", "NOUN"),
    ("adv", "ADV"),
    ("manner", "ADV"),
    ("where", "ADV"),
    ("and", "CCONJ"),
    ("conj", "SCONJ"),
    ("say", "VERB"),
    ("look", "VERB"),
    ("pron", "PRON"),
)
_PUNCT = set(",.!?:;()\"'„“«»")

# Closed-class words whose role does not name their part of speech (lower-cased forms).
_FORMS: dict[str, dict[str, str]] = {
    "de": {"es": "PRON", "sich": "PRON", "links": "ADV", "rechts": "ADV", "entfernt": "ADJ"},
    "ru": {
        "слева": "ADV",
        "справа": "ADV",
        "рядом": "ADV",
        "потому": "ADV",
        "что": "SCONJ",
        "находится": "VERB",
        "за": "ADP",
        "летучая": "ADJ",
        "летучую": "ADJ",
        "летучей": "ADJ",
    },
    "fr": {
        "il": "PRON",
        "y": "PRON",
        "se": "PRON",
        "gauche": "NOUN",
        "droite": "NOUN",
        "au-dessus": "ADV",
        "près": "ADV",
        "parce": "ADV",
        "pendant": "ADP",
        "en": "ADP",
    },
}


def target_upos(tok: Tok, lang: str) -> str:
    """The UD part of speech of one target token of language ``lang``."""
    if tok.upos != "X":
        return tok.upos
    if tok.form in _PUNCT:
        return "PUNCT"
    form = tok.form.lower()
    if form in _FORMS.get(lang, {}):
        return _FORMS[lang][form]
    roles = {concept.rsplit(".", 1)[-1] for concept in tok.concepts}
    if lang == "fr" and "material" in roles:  # "en bois": the material is a noun
        return "NOUN"
    for role, tag in _ROLES:
        if role in roles:
            return tag
    raise ValueError(f"no part of speech for {lang} token {tok.form!r} with concepts {tok.concepts}")


def pos_line(tokens: Sequence[Tok], lang: str) -> str:
    """One line of a ``.pos`` file: the tags of a sentence's Moses tokens, space-separated."""
    return " ".join(target_upos(tok, lang) for tok in tokens)
