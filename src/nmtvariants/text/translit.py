"""ISO 9 transliteration (Cyrillic <-> Latin) exactly as Lingua::Translit 0.29's ``"ISO 9"`` table does it.

Why a port: Emelin et al. (2019) learned the EN-RU joint BPE on Russian transliterated with
``translit -t "ISO 9"`` and mapped the merges back with ``translit -t "ISO 9" -r``. To reproduce their
segmentation the pipeline needs that table's exact behaviour, quirks included, without a Perl
dependency at run time. (The Debian package ``liblingua-translit-perl`` remains the test oracle.)

How Lingua::Translit applies a table (``Translit.pm``, ``translit``/``translit_reverse``): the rules are
applied **one after another, in table order, in both directions**, each as a global regex substitution
``s/FROM/TO/g`` over the whole text (reverse: ``s/TO/FROM/g``). A rule with a context is a look-behind
substitution ``s/(?<=\\p{IsUpper})FROM/TO/g`` that inspects the text *as rewritten by the earlier rules*.
Consequences that this module reproduces:

* capital Ъ and Ь are transliterated only after an upper-case character (``ОБЪЕКТ`` -> ``OBʺEKT``,
  but ``Ъ`` at the start of a word stays Cyrillic); in reverse, ``ʺ``/``ʹ`` after an upper-case letter
  become capital Ъ/Ь (``Dʹâvol`` -> ``ДЬявол``);
* a rule whose source was consumed by an earlier rule is dead: ``У́`` never becomes ``Ú`` (``У`` is
  rewritten first), in reverse ``A̋`` comes back as ``А`` + U+030B;
* the table is not injective: ћ and Ӳ both give ``Ű`` (reverse gives ћ), and Latin letters that happen
  to be in the table (``iPhone``) are turned into Cyrillic by the reverse direction, while ``’`` becomes
  U+02BC (the reverse of the table's ``ʼ -> ’`` rule).

Speed: the rule list is compiled once into a short list of equivalent steps (``str.translate`` tables
for runs of single-character rules that cannot feed each other, plain replacements for the few live
multi-character rules, and the two context rules); see ``_compile``. When a line contains no context
character the whole direction is one ``str.translate``.

Perl's ``\\p{IsUpper}`` is Unicode's ``Uppercase`` property, which is what ``str.isupper`` tests on one
character; both are Unicode 14.0 on Python 3.11 and Debian 12's Perl 5.36 (checked on every code point).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import NamedTuple


class Rule(NamedTuple):
    """One line of the Lingua::Translit table: ``cyrillic`` is its ``from``, ``latin`` its ``to``."""

    cyrillic: str
    latin: str
    after_upper: bool = False  # context {after => '\p{IsUpper}'}: only right after an upper-case char


# Lingua::Translit 0.29, Tables.pm, table "iso_9" ("ISO 9:1995, Cyrillic to Latin", reversible), in its
# order. Generated from the module's loaded table (Perl JSON::PP dump); do not reorder.
ISO9_RULES: tuple[Rule, ...] = (
    Rule("\u0410", "A"),  # Capital Letter A
    Rule("\u0430", "a"),  # Small Letter A
    Rule("\u04d0", "\u0102"),  # Capital Letter A With Breve
    Rule("\u04d1", "\u0103"),  # Small Letter A With Breve
    Rule("\u04d2", "\u00c4"),  # Capital Letter A With Diaeresis
    Rule("\u04d3", "\u00e4"),  # Small Letter A With Diaeresis
    Rule("\u04d8", "A\u030b"),  # Capital Letter Schwa
    Rule("\u04d9", "a\u030b"),  # Small Letter Schwa
    Rule("\u0411", "B"),  # Capital Letter Be
    Rule("\u0431", "b"),  # Small Letter Be
    Rule("\u0412", "V"),  # Capital Letter Ve
    Rule("\u0432", "v"),  # Small Letter Ve
    Rule("\u0413", "G"),  # Capital Letter Ghe
    Rule("\u0433", "g"),  # Small Letter Ghe
    Rule("\u0490", "G\u0300"),  # Capital Letter Ghe With Upturn
    Rule("\u0491", "g\u0300"),  # Small Letter Ghe With Upturn
    Rule("\u0494", "\u011e"),  # Capital Letter Ghe With Middle Hook
    Rule("\u0495", "\u011f"),  # Small Letter Ghe With Middle Hook
    Rule("\u0492", "\u0120"),  # Capital Letter Ghe With Stroke
    Rule("\u0493", "\u0121"),  # Small Letter Ghe With Stroke
    Rule("\u0414", "D"),  # Capital Letter De
    Rule("\u0434", "d"),  # Small Letter De
    Rule("\u0402", "\u0110"),  # Capital Letter Dje
    Rule("\u0452", "\u0111"),  # Small Letter Dje
    Rule("\u0403", "\u01f4"),  # Capital Letter Gje
    Rule("\u0453", "\u01f5"),  # Small Letter Gje
    Rule("\u0415", "E"),  # Capital Letter Ie
    Rule("\u0435", "e"),  # Small Letter Ie
    Rule("\u0401", "\u00cb"),  # Capital Letter Io
    Rule("\u0451", "\u00eb"),  # Small Letter Io
    Rule("\u04d6", "\u0114"),  # Capital Letter Ie With Breve
    Rule("\u04d7", "\u0115"),  # Small Letter Ie With Breve
    Rule("\u0404", "\u00ca"),  # Capital Letter Ukrainian Ie
    Rule("\u0454", "\u00ea"),  # Small Letter Ukrainian Ie
    Rule("\u04bc", "C\u0306"),  # Capital Letter Abkhasian Che
    Rule("\u04bd", "c\u0306"),  # Small Letter Abkhasian Che
    Rule("\u04be", "\u00c7\u0306"),  # Capital Letter Abkhasian Che With Descender
    Rule("\u04bf", "\u00e7\u0306"),  # Small Letter Abkhasian Che With Descender
    Rule("\u0416", "\u017d"),  # Capital Letter Zhe
    Rule("\u0436", "\u017e"),  # Small Letter Zhe
    Rule("\u04c1", "Z\u0306"),  # Capital Letter Zhe With Breve
    Rule("\u04c2", "z\u0306"),  # Small Letter Zhe With Breve
    Rule("\u04dc", "Z\u0304"),  # Capital Letter Zhe With Diaeresis
    Rule("\u04dd", "z\u0304"),  # Small Letter Zhe With Diaeresis
    Rule("\u0496", "\u017d\u0326"),  # Capital Letter Zhe With Descender
    Rule("\u0497", "\u017e\u0327"),  # Small Letter Zhe With Descender
    Rule("\u0417", "Z"),  # Capital Letter Ze
    Rule("\u0437", "z"),  # Small Letter Ze
    Rule("\u04de", "Z\u0308"),  # Capital Letter Ze With Diaeresis
    Rule("\u04df", "z\u0308"),  # Small Letter Ze With Diaeresis
    Rule("\u0405", "\u1e90"),  # Capital Letter Dze
    Rule("\u0455", "\u1e91"),  # Small Letter Dze
    Rule("\u04e0", "\u0179"),  # Capital Letter Abkhasian Dze
    Rule("\u04e1", "\u017a"),  # Small Letter Abkhasian Dze
    Rule("\u0418", "I"),  # Capital Letter I
    Rule("\u0438", "i"),  # Small Letter I
    Rule("\u04e4", "\u00ce"),  # Capital Letter I With Diaeresis
    Rule("\u04e5", "\u00ee"),  # Small Letter I With Diaeresis
    Rule("\u0406", "\u00cc"),  # Capital Letter Byelorussian-Ukrainian I
    Rule("\u0456", "\u00ec"),  # Small Letter Byelorussian-Ukrainian I
    Rule("\u0407", "\u00cf"),  # Capital Letter Yi
    Rule("\u0457", "\u00ef"),  # Small Letter Yi
    Rule("\u0419", "J"),  # Capital Letter Short I
    Rule("\u0439", "j"),  # Small Letter Short I
    Rule("\u0408", "J\u030c"),  # Capital Letter Je
    Rule("\u0458", "\u01f0"),  # Small Letter Je
    Rule("\u041a", "K"),  # Capital Letter Ka
    Rule("\u043a", "k"),  # Small Letter Ka
    Rule("\u049a", "\u0136"),  # Capital Letter Ka With Descender
    Rule("\u049b", "\u0137"),  # Small Letter Ka With Descender
    Rule("\u049e", "K\u0304"),  # Capital Letter Ka With Stroke
    Rule("\u049f", "k\u0304"),  # Small Letter Ka With Stroke
    Rule("\u041b", "L"),  # Capital Letter El
    Rule("\u043b", "l"),  # Small Letter El
    Rule("\u0409", "L\u0302"),  # Capital Letter Lje
    Rule("\u0459", "l\u0302"),  # Small Letter Lje
    Rule("\u041c", "M"),  # Capital Letter Em
    Rule("\u043c", "m"),  # Small Letter Em
    Rule("\u041d", "N"),  # Capital Letter En
    Rule("\u043d", "n"),  # Small Letter En
    Rule("\u040a", "N\u0302"),  # Capital Letter Nje
    Rule("\u045a", "n\u0302"),  # Small Letter Nje
    Rule("\u04a4", "\u1e44"),  # Capital Ligature En Ghe
    Rule("\u04a5", "\u1e45"),  # Small Ligature En Ghe
    Rule("\u04a2", "\u1e46"),  # Capital Letter En With Descender
    Rule("\u04a3", "\u1e47"),  # Small Letter En With Descender
    Rule("\u041e", "O"),  # Capital Letter O
    Rule("\u043e", "o"),  # Small Letter O
    Rule("\u04e6", "\u00d6"),  # Capital Letter O With Diaeresis
    Rule("\u04e7", "\u00f6"),  # Small Letter O With Diaeresis
    Rule("\u04e8", "\u00d4"),  # Capital Letter Barred O
    Rule("\u04e9", "\u00f4"),  # Small Letter Barred O
    Rule("\u041f", "P"),  # Capital Letter Pe
    Rule("\u043f", "p"),  # Small Letter Pe
    Rule("\u04a6", "\u1e54"),  # Capital Letter Pe With Middle Hook
    Rule("\u04a7", "\u1e55"),  # Small Letter Pe With Middle Hook
    Rule("\u0420", "R"),  # Capital Letter Er
    Rule("\u0440", "r"),  # Small Letter Er
    Rule("\u0421", "S"),  # Capital Letter Es
    Rule("\u0441", "s"),  # Small Letter Es
    Rule("\u04aa", "\u00c7"),  # Capital Letter Es With Descender
    Rule("\u04ab", "\u00e7"),  # Small Letter Es With Descender
    Rule("\u0422", "T"),  # Capital Letter Te
    Rule("\u0442", "t"),  # Small Letter Te
    Rule("\u04ac", "\u0162"),  # Capital Letter Te With Descender
    Rule("\u04ad", "\u0163"),  # Small Letter Te With Descender
    Rule("\u040b", "\u0106"),  # Capital Letter Tshe
    Rule("\u045b", "\u0170"),  # Small Letter Tshe
    Rule("\u040c", "\u1e30"),  # Capital Letter Kje
    Rule("\u045c", "\u1e31"),  # Small Letter Kje
    Rule("\u0423", "U"),  # Capital Letter U
    Rule("\u0443", "u"),  # Small Letter U
    Rule("\u0423\u0301", "\u00da"),  # Capital Letter U + Combining Acute Accent
    Rule("\u0443\u0301", "\u00fa"),  # Small Letter U + Combining Acute Accent
    Rule("\u040e", "\u016c"),  # Capital Letter Short U
    Rule("\u045e", "\u016d"),  # Small Letter Short U
    Rule("\u04f0", "\u00dc"),  # Capital Letter U With Diaeresis
    Rule("\u04f1", "\u00fc"),  # Small Letter U With Diaeresis
    Rule("\u04f2", "\u0170"),  # Capital Letter U With Double Acute
    Rule("\u04f3", "\u0171"),  # Small Letter U With Double Acute
    Rule("\u04ae", "\u00d9"),  # Capital Letter Straight U
    Rule("\u04af", "\u00f9"),  # Small Letter Straight U
    Rule("\u0424", "F"),  # Capital Letter Ef
    Rule("\u0444", "f"),  # Small Letter Ef
    Rule("\u0425", "H"),  # Capital Letter Ha
    Rule("\u0445", "h"),  # Small Letter Ha
    Rule("\u04b2", "\u1e28"),  # Capital Letter Ha With Descender
    Rule("\u04b3", "\u1e29"),  # Small Letter Ha With Descender
    Rule("\u04ba", "\u1e24"),  # Capital Letter Shha
    Rule("\u04bb", "\u1e25"),  # Small Letter Shha
    Rule("\u0426", "C"),  # Capital Letter Tse
    Rule("\u0446", "c"),  # Small Letter Tse
    Rule("\u04b4", "C\u0304"),  # Capital Ligature Te Tse
    Rule("\u04b5", "c\u0304"),  # Small Ligature Te Tse
    Rule("\u0427", "\u010c"),  # Capital Letter Che
    Rule("\u0447", "\u010d"),  # Small Letter Che
    Rule("\u04f4", "C\u0308"),  # Capital Letter Che With Diaeresis
    Rule("\u04f5", "c\u0308"),  # Small Letter Che With Diaeresis
    Rule("\u04cb", "\u00c7"),  # Capital Letter Khakassian Che
    Rule("\u04cc", "\u00e7"),  # Small Letter Khakassian Che
    Rule("\u040f", "D\u0302"),  # Capital Letter Dzhe
    Rule("\u045f", "d\u0302"),  # Small Letter Dzhe
    Rule("\u0428", "\u0160"),  # Capital Letter Sha
    Rule("\u0448", "\u0161"),  # Small Letter Sha
    Rule("\u0429", "\u015c"),  # Capital Letter Shcha
    Rule("\u0449", "\u015d"),  # Small Letter Shcha
    Rule("\u042a", "\u02ba", after_upper=True),  # Capital Letter Hard Sign
    Rule("\u044a", "\u02ba"),  # Small Letter Hard Sign
    Rule("\u02bc", "\u2019"),  # Modifier Letter Apostrophe
    Rule("\u042b", "Y"),  # Capital Letter Yeru
    Rule("\u044b", "y"),  # Small Letter Yeru
    Rule("\u04f8", "\u0178"),  # Capital Letter Yeru With Diaeresis
    Rule("\u04f9", "\u00ff"),  # Small Letter Yeru With Diaeresis
    Rule("\u042c", "\u02b9", after_upper=True),  # Capital Letter Soft Sign
    Rule("\u044c", "\u02b9"),  # Small Letter Soft Sign
    Rule("\u042d", "\u00c8"),  # Capital Letter E
    Rule("\u044d", "\u00e8"),  # Small Letter E
    Rule("\u042e", "\u00db"),  # Capital Letter Yu
    Rule("\u044e", "\u00fb"),  # Small Letter Yu
    Rule("\u042f", "\u00c2"),  # Capital Letter Ya
    Rule("\u044f", "\u00e2"),  # Small Letter Ya
    Rule("\u048c", "\u011a"),  # Capital Letter Semisoft Sign
    Rule("\u048d", "\u011b"),  # Small Letter Semisoft Sign
    Rule("\u046a", "\u01cd"),  # Capital Letter Big Yus
    Rule("\u046b", "\u01ce"),  # Small Letter Big Yus
    Rule("\u0472", "F\u0300"),  # Capital Letter Fita
    Rule("\u0473", "f\u0300"),  # Small Letter Fita
    Rule("\u0474", "\u1ef2"),  # Capital Letter Izhitsa
    Rule("\u0475", "\u1ef3"),  # Small Letter Izhitsa
    Rule("\u04a8", "\u00d2"),  # Capital Letter Abkhasian Ha
    Rule("\u04a9", "\u00f2"),  # Small Letter Abkhasian Ha
    Rule("\u04c0", "\u2021"),  # Letter Palochka
)


# --------------------------------------------------------------------------------------------------
# Compilation of a sequential rule list into equivalent fast steps


@dataclass
class _Translate:
    table: dict[str, str] = field(default_factory=dict)

    def keys(self) -> set[str]:
        return set(self.table)

    def produced(self) -> set[str]:
        return {char for value in self.table.values() for char in value}


@dataclass
class _Replace:
    pattern: str
    replacement: str


@dataclass
class _Context:
    """``s/(?<=\\p{IsUpper})PATTERN/REPLACEMENT/g`` on the text as it stands at this step."""

    pattern: str
    replacement: str


_Step = _Translate | _Replace | _Context


def _produced(step: _Step) -> set[str]:
    return step.produced() if isinstance(step, _Translate) else set(step.replacement)


def _commutes(replace: _Replace, translate: _Translate) -> bool:
    """True if a replacement may run before a translate step that precedes it, with the same result."""
    keys = translate.keys()
    return (
        not set(replace.pattern) & keys
        and not set(replace.pattern) & translate.produced()
        and not set(replace.replacement) & keys
    )


def _sequential_steps(rules: tuple[Rule, ...], reverse: bool) -> list[_Step]:
    """One step per rule, single-character rules grouped while no earlier one can feed a later one."""
    steps: list[_Step] = []
    for rule in rules:
        source, target = (rule.latin, rule.cyrillic) if reverse else (rule.cyrillic, rule.latin)
        if rule.after_upper:
            steps.append(_Context(source, target))
        elif len(source) == 1:
            last = steps[-1] if steps else None
            if not isinstance(last, _Translate) or source in last.produced():
                last = _Translate()
                steps.append(last)
            # a key already present was consumed by an earlier rule of the group: this rule is dead
            last.table.setdefault(source, target)
        else:
            steps.append(_Replace(source, target))
    return steps


def _drop_dead(steps: list[_Step]) -> list[_Step]:
    """Remove replacements whose pattern needs a character that earlier steps removed for good."""
    kept: list[_Step] = []
    gone: set[str] = set()  # characters that cannot occur any more at this point of the sequence
    for step in steps:
        if isinstance(step, _Replace) and set(step.pattern) & gone:
            continue
        kept.append(step)
        gone -= _produced(step)
        if isinstance(step, _Translate):
            gone |= step.keys() - step.produced()
    return kept


def _hoist_and_merge(steps: list[_Step]) -> list[_Step]:
    """Move replacements in front of translate steps they commute with; merge adjacent translates."""
    steps = list(steps)
    moved = True
    while moved:
        moved = False
        for index in range(1, len(steps)):
            before, step = steps[index - 1], steps[index]
            if isinstance(step, _Replace) and isinstance(before, _Translate) and _commutes(step, before):
                steps[index - 1], steps[index] = step, before
                moved = True
    merged: list[_Step] = []
    for step in steps:
        last = merged[-1] if merged else None
        if (
            isinstance(step, _Translate)
            and isinstance(last, _Translate)
            and not (step.keys() & last.produced())
        ):
            combined = _Translate(dict(last.table))
            for key, value in step.table.items():
                combined.table.setdefault(key, value)  # a key of `last` was consumed there already
            merged[-1] = combined
        else:
            merged.append(step)
    return merged


def _compile(rules: tuple[Rule, ...], reverse: bool) -> tuple[list[_Step], list[_Step], str]:
    """Return (steps, steps when no context character is present, the context characters)."""
    steps = _hoist_and_merge(_drop_dead(_sequential_steps(rules, reverse)))
    contexts = [step for step in steps if isinstance(step, _Context)]
    context_chars = "".join(sorted({char for step in contexts for char in step.pattern}))
    # The shortcut is valid only if no step can create a context character: then a line without one
    # never triggers a context rule and the context steps can be dropped.
    if any(set(context_chars) & _produced(step) for step in steps):
        return steps, steps, context_chars
    without = _hoist_and_merge([step for step in steps if not isinstance(step, _Context)])
    return steps, without, context_chars


def _runner(steps: list[_Step]) -> Callable[[str], str]:
    prepared: list[Callable[[str], str]] = []
    for step in steps:
        if isinstance(step, _Translate):
            prepared.append(_translate_fn(str.maketrans(step.table)))
        elif isinstance(step, _Replace):
            prepared.append(_replace_fn(step.pattern, step.replacement))
        else:
            prepared.append(_context_fn(step.pattern, step.replacement))

    def run(text: str) -> str:
        for function in prepared:
            text = function(text)
        return text

    return run


def _translate_fn(table: dict[int, str]) -> Callable[[str], str]:
    return lambda text: text.translate(table)


def _replace_fn(pattern: str, replacement: str) -> Callable[[str], str]:
    return lambda text: text.replace(pattern, replacement) if pattern in text else text


def _context_fn(pattern: str, replacement: str) -> Callable[[str], str]:
    regex = re.compile(re.escape(pattern))

    def apply(text: str) -> str:
        if pattern not in text:
            return text

        def substitute(match: re.Match[str]) -> str:
            start = match.start()
            # the look-behind sees the string before this rule's own substitutions (as in Perl s///g)
            return replacement if start and text[start - 1].isupper() else match.group(0)

        return regex.sub(substitute, text)

    return apply


class _Direction:
    def __init__(self, rules: tuple[Rule, ...], reverse: bool):
        steps, without_context, self.context_chars = _compile(rules, reverse)
        self.steps = steps
        self.full = _runner(steps)
        self.fast = _runner(without_context)

    def __call__(self, text: str) -> str:
        for char in self.context_chars:
            if char in text:
                return self.full(text)
        return self.fast(text)


_TO_LATIN = _Direction(ISO9_RULES, reverse=False)
_TO_CYRILLIC = _Direction(ISO9_RULES, reverse=True)


def iso9_to_latin(text: str) -> str:
    """Cyrillic -> Latin, identical to ``translit -t "ISO 9"`` (Lingua::Translit 0.29)."""
    return _TO_LATIN(text)


def iso9_to_cyrillic(text: str) -> str:
    """Latin -> Cyrillic, identical to ``translit -t "ISO 9" -r`` (Lingua::Translit 0.29)."""
    return _TO_CYRILLIC(text)


@dataclass(frozen=True)
class Transliteration:
    """A reversible transliteration: BPE learned on ``forward(text)``, merges mapped back by ``reverse``."""

    name: str
    forward: Callable[[str], str]
    reverse: Callable[[str], str]


ISO9 = Transliteration("iso9", iso9_to_latin, iso9_to_cyrillic)

# Names accepted by the command line (`--translit ru=iso9`).
TRANSLITERATIONS: dict[str, Transliteration] = {ISO9.name: ISO9}
