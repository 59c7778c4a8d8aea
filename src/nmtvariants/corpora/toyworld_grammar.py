"""Realise a sentence plan as tokens in English, German, Russian and French.

Every token carries the plan concepts it expresses (``m.subj.noun``, ``m.verb``, ...): two tokens of
different languages are aligned exactly when they share a concept, which gives gold word alignments
for free. English tokens also carry a UD head and relation, which gives the gold dependency tree.
Tokens are produced already split the way the Moses tokenizer splits the detokenised text (the tests
check this against sacremoses for every sentence), so trees and alignments index Moses tokens.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import ClassVar

from nmtvariants.corpora.toyworld_lexicon import (
    ADJECTIVES,
    ADVERBS,
    CONJUNCTIONS,
    LOOK,
    MANNER,
    NAMES,
    RELATIONS,
    RU_ENDINGS,
    SAY,
    VERBS,
)
from nmtvariants.corpora.toyworld_plan import NP, PP, Clause, Name, Plan, Rel, Subject


@dataclass(eq=False)
class Tok:
    """One Moses-style token; ``head``/``deprel``/``upos`` are filled for English only."""

    form: str
    concepts: tuple[str, ...] = ()
    upos: str = "X"
    lemma: str = "_"
    deprel: str = "dep"
    head: Tok | None = field(default=None, repr=False)


def _dep(tok: Tok, head: Tok | None, deprel: str) -> Tok:
    tok.head, tok.deprel = head, deprel
    return tok


def _cap(toks: Sequence[Tok]) -> None:
    if toks:
        toks[0].form = toks[0].form[:1].upper() + toks[0].form[1:]


_PUNCT_FORMS = {",", ".", "!", "?", ":", "“", "„", "«", "»", '"', "(", ")"}


def _drop_dangling_commas(toks: list[Tok]) -> list[Tok]:
    """Drop a relative clause's closing comma where punctuation follows (or nothing does)."""
    out = []
    for i, tok in enumerate(toks):
        closing = tok.form == "," and any(c.endswith(".close") for c in tok.concepts)
        if closing and (i + 1 == len(toks) or toks[i + 1].form in _PUNCT_FORMS):
            continue
        out.append(tok)
    return out


def align(source: Sequence[Tok], target: Sequence[Tok]) -> list[tuple[int, int]]:
    """Sure links: every pair of tokens that express a common plan concept."""
    index: dict[str, list[int]] = {}
    for j, tok in enumerate(target):
        for concept in tok.concepts:
            index.setdefault(concept, []).append(j)
    links = {(i, j) for i, tok in enumerate(source) for c in tok.concepts for j in index.get(c, ())}
    return sorted(links)


# -- detokenisation ---------------------------------------------------------------------------------
_NO_SPACE_BEFORE = {",", ".", "!", "?", ":", ")"}
_NO_SPACE_BEFORE_FR = {",", ".", ")"}


def detokenize(forms: Sequence[str], lang: str) -> str:
    """Join tokens the way each language writes them (French spaces before ? ! : and inside « »)."""
    out: list[str] = []
    glue_next = False
    quote_open = False
    for form in forms:
        space = bool(out) and not glue_next
        if lang == "fr":
            if form in _NO_SPACE_BEFORE_FR:
                space = False
        elif form in _NO_SPACE_BEFORE or form in ("“", "»"):
            space = False
        glue_next = False
        if form == '"':
            if quote_open:
                space = False
            else:
                glue_next = True
            quote_open = not quote_open
        elif form in ("(", "„") or (form == "«" and lang != "fr") or (lang == "fr" and form.endswith("'")):
            glue_next = True
        out.append((" " if space else "") + form)
    return "".join(out)


# -- English ----------------------------------------------------------------------------------------
class English:
    lang = "en"

    def np(self, np: Subject) -> tuple[list[Tok], Tok]:
        if isinstance(np, Name):
            tok = Tok(NAMES[np.key][0], (f"{np.ref}.noun",), "PROPN", np.key)
            return [tok], tok
        if isinstance(np, Rel):
            tok = Tok("that", (f"{np.ref}.pron",), "PRON", "that")
            return [tok], tok
        toks, head = self._bare_np(np)
        if np.pp is not None:
            pp, phead = self.pp(np.pp, f"{np.ref}.pp")
            toks += pp
            _dep(phead, head, "nmod")
        if np.rel is not None:
            rel, rroot = self.clause(np.rel)
            toks += rel
            _dep(rroot, head, "acl:relcl")
        return toks, head

    def _bare_np(self, np: NP) -> tuple[list[Tok], Tok]:
        entry = np.entry
        head = Tok(entry.en[0] if np.count == 1 else entry.en[1], (f"{np.ref}.noun",), "NOUN", entry.en[0])
        toks: list[Tok] = []
        if np.count > 1:
            toks.append(_dep(Tok(str(np.count), (f"{np.ref}.num",), "NUM", str(np.count)), head, "nummod"))
        else:
            toks.append(_dep(Tok("the" if np.definite else "a", (f"{np.ref}.det",), "DET"), head, "det"))
        for slot, key in np.modifiers:
            adj = ADJECTIVES[key]
            rel = "compound" if adj.en_upos == "NOUN" else "amod"
            toks.append(_dep(Tok(adj.en, (f"{np.ref}.{slot}",), adj.en_upos, adj.en), head, rel))
        toks.append(head)
        if toks[0].form == "a" and toks[1].form[0] in "aeiou":
            toks[0].form = "an"
        for tok in toks:
            if tok.lemma == "_":
                tok.lemma = tok.form.lower()
        return toks, head

    def subjects(self, subj: Sequence[Subject], tag: str) -> tuple[list[Tok], Tok]:
        toks, head = self.np(subj[0])
        if len(subj) > 1:
            more, head2 = self.np(subj[1])
            toks += [_dep(Tok("and", (f"{tag}.and",), "CCONJ", "and"), head2, "cc"), *more]
            _dep(head2, head, "conj")
        return toks, head

    def pp(self, pp: PP, tag: str) -> tuple[list[Tok], Tok]:
        """Tokens and the PP's head (the noun, or "left"/"right" of "to the left of")."""
        toks, head = self.np(pp.np)
        if pp.kind in ("left", "right"):
            words = RELATIONS[pp.kind][0]
            rel = Tok(words[2], (f"{tag}.rel",), "NOUN", words[2])
            pre = [
                _dep(Tok("to", (f"{tag}.rel",), "ADP", "to"), rel, "case"),
                _dep(Tok("the", (f"{tag}.rel",), "DET", "the"), rel, "det"),
                rel,
                _dep(Tok("of", (f"{tag}.rel",), "ADP", "of"), head, "case"),
            ]
            _dep(head, rel, "nmod")
            return pre + toks, rel
        word, concept = {"towards": ("towards", "goal"), "from": ("from", "from")}.get(
            pp.kind, (RELATIONS[pp.kind][0][0] if pp.kind in RELATIONS else pp.kind, "rel")
        )
        return [_dep(Tok(word, (f"{tag}.{concept}",), "ADP", word), head, "case"), *toks], head

    def _tail(self, c: Clause, root: Tok) -> list[Tok]:
        if not c.manner:
            return []
        adv = _dep(Tok(MANNER[c.manner][0], (f"{c.tag}.manner",), "ADV", c.manner), root, "advmod")
        return [
            _dep(Tok("(", (f"{c.tag}.lpar",), "PUNCT", "("), adv, "punct"),
            adv,
            _dep(Tok(")", (f"{c.tag}.rpar",), "PUNCT", ")"), adv, "punct"),
        ]

    def clause(self, c: Clause, question: bool = False) -> tuple[list[Tok], Tok]:
        tag = c.tag
        subj, shead = self.subjects(c.subj, tag)
        plural = len(c.subj) > 1 or (isinstance(c.subj[0], NP) and c.subj[0].count > 1)
        if c.kind in ("intrans", "trans"):
            verb = VERBS[c.verb]  # type: ignore[index]
            root = Tok(verb.en[1] if c.perfect else verb.en[0], (f"{tag}.verb",), "VERB", verb.en[2])
            _dep(shead, root, "nsubj")
            toks = [*subj]
            if c.perfect:
                toks.append(_dep(Tok("has", (f"{tag}.aux",), "AUX", "have"), root, "aux"))
            toks.append(root)
            if verb.en_particle:
                toks.append(
                    _dep(
                        Tok(verb.en_particle, (f"{tag}.prt",), "ADP", verb.en_particle), root, "compound:prt"
                    )
                )
            if c.obj is not None:
                obj, ohead = self.np(c.obj)
                _dep(ohead, root, "obj")
                if isinstance(c.obj, Rel):  # object relative: "the ball that the cat pushes"
                    toks = obj + toks
                else:
                    toks += obj
            if c.pp is not None:
                pp, phead = self.pp(c.pp, f"{tag}.pp")
                toks += pp
                _dep(phead, root, "obl")
        elif c.kind == "cop":
            pp, root = self.pp(c.pp, f"{tag}.pp")  # type: ignore[arg-type]
            cop = _dep(Tok("are" if plural else "is", (f"{tag}.cop",), "AUX", "be"), root, "cop")
            _dep(shead, root, "nsubj")
            toks = [cop, *subj, *pp] if question else [*subj, cop, *pp]
        elif c.kind == "exist":
            root = Tok("are" if plural else "is", (f"{tag}.exist",), "VERB", "be")
            there = _dep(Tok("there", (f"{tag}.exist",), "PRON", "there"), root, "expl")
            _dep(shead, root, "nsubj")
            pp, phead = self.pp(c.pp, f"{tag}.pp")  # type: ignore[arg-type]
            _dep(phead, root, "obl")
            toks = [there, root, *subj, *pp]
        elif c.kind == "measure":
            root = Tok("metres", (f"{tag}.unit",), "NOUN", "metre")
            cop = _dep(Tok("is", (f"{tag}.cop",), "AUX", "be"), root, "cop")
            num = _dep(Tok(c.measure, (f"{tag}.num",), "NUM", c.measure), root, "nummod")  # type: ignore[arg-type]
            _dep(shead, root, "nsubj")
            pp, phead = self.pp(c.pp, f"{tag}.pp")  # type: ignore[arg-type]
            _dep(phead, root, "obl")
            toks = [*subj, cop, num, root, *pp]
        else:
            raise ValueError(c.kind)
        if c.adverb:
            toks.insert(0, _dep(Tok(ADVERBS[c.adverb][0], (f"{tag}.adv",), "ADV", c.adverb), root, "advmod"))
        return toks + self._tail(c, root), root

    def sentence(self, plan: Plan) -> list[Tok]:
        end = Tok(plan.mark, ("p.end",), "PUNCT", plan.mark)
        if plan.kind == "where":
            root = Tok("where", ("m.where",), "ADV", "where")
            subj, shead = self.np(plan.main.subj[0])
            _dep(shead, root, "nsubj")
            toks = [
                root,
                _dep(Tok("is", ("m.cop",), "AUX", "be"), root, "cop"),
                *subj,
                _dep(end, root, "punct"),
            ]
        elif plan.kind == "quote":
            say = Tok(SAY[0], ("q.say",), "VERB", "say")
            spk, _ = self.np(plan.speaker)  # type: ignore[arg-type]
            _dep(spk[0], say, "nsubj")
            inner, iroot = self.clause(plan.main)
            _cap(inner)
            _dep(iroot, say, "ccomp")
            toks = [
                *spk,
                say,
                _dep(Tok(":", ("p.colon",), "PUNCT", ":"), say, "punct"),
                _dep(Tok('"', ("p.qopen",), "PUNCT", '"'), iroot, "punct"),
                *inner,
                _dep(end, iroot, "punct"),
                _dep(Tok('"', ("p.qclose",), "PUNCT", '"'), iroot, "punct"),
            ]
        elif plan.kind == "look":
            look = Tok(LOOK[0], ("l.look",), "VERB", "look")
            inner, iroot = self.clause(plan.main)
            _dep(iroot, look, "parataxis")
            toks = [
                look,
                _dep(Tok(",", ("p.lookcomma",), "PUNCT", ","), iroot, "punct"),
                *inner,
                _dep(end, look, "punct"),
            ]
        elif plan.sub is not None:
            main, mroot = self.clause(plan.main)
            sub, sroot = self.clause(plan.sub)
            _dep(sroot, mroot, "advcl")
            conj = _dep(Tok(CONJUNCTIONS[plan.conj][0], ("s.conj",), "SCONJ", plan.conj), sroot, "mark")  # type: ignore[index]
            if plan.sub_first:
                toks = [conj, *sub, _dep(Tok(",", ("p.subcomma",), "PUNCT", ","), sroot, "punct"), *main]
            else:
                toks = [*main, conj, *sub]
            toks.append(_dep(end, mroot, "punct"))
        else:
            toks, root = self.clause(plan.main, question=plan.kind == "question")
            toks.append(_dep(end, root, "punct"))
        _cap(toks)
        return toks


# -- German -----------------------------------------------------------------------------------------
_DE_DEF = {
    "nom": {"m": "der", "f": "die", "n": "das", "pl": "die"},
    "acc": {"m": "den", "f": "die", "n": "das", "pl": "die"},
    "dat": {"m": "dem", "f": "der", "n": "dem", "pl": "den"},
}
_DE_INDEF = {
    "nom": {"m": "ein", "f": "eine", "n": "ein"},
    "acc": {"m": "einen", "f": "eine", "n": "ein"},
    "dat": {"m": "einem", "f": "einer", "n": "einem"},
}
_DE_MIXED = {
    "nom": {"m": "er", "f": "e", "n": "es"},
    "acc": {"m": "en", "f": "e", "n": "es"},
    "dat": {"m": "en", "f": "en", "n": "en"},
}


def de_adjective_ending(article: str, gender: str, case: str) -> str:
    """German adjective ending after a definite article (weak), ein (mixed) or none (strong plural)."""
    if gender == "pl":
        return "en" if article == "def" or case == "dat" else "e"
    if article == "indef":
        return _DE_MIXED[case][gender]
    return "en" if case == "dat" or (case == "acc" and gender == "m") else "e"


class German:
    lang = "de"

    def np(self, np: Subject, case: str, contract: str = "") -> list[Tok]:
        """A noun phrase in ``case``; ``contract`` ("zu"/"von") fuses the preposition with the article.

        A relative clause is set off by commas (verb last); `_drop_dangling_commas` removes the
        closing one where punctuation follows anyway.
        """
        if isinstance(np, Name):
            return [Tok(NAMES[np.key][1], (f"{np.ref}.noun",), "PROPN")]
        if isinstance(np, Rel):  # the relative pronoun: gender of its noun, case of its own clause
            gender = np.antecedent.entry.de[0]
            return [Tok(_DE_DEF[case][gender], (f"{np.ref}.pron",), "PRON")]
        toks = self._bare_np(np, case, contract)
        if np.pp is not None:
            toks += self.pp(np.pp, f"{np.ref}.pp")[0]
        if np.rel is not None:
            tag = np.rel.tag
            toks += [
                Tok(",", (f"{tag}.open",), "PUNCT"),
                *self.clause(np.rel, "sub"),
                Tok(",", (f"{tag}.close",), "PUNCT"),
            ]
        return toks

    def _bare_np(self, np: NP, case: str, contract: str) -> list[Tok]:
        gender, sg, pl = np.entry.de
        g = "pl" if np.count > 1 else gender
        toks: list[Tok] = []
        article = "def" if np.definite else ("none" if np.count > 1 else "indef")
        if np.count > 1:
            toks.append(Tok(str(np.count), (f"{np.ref}.num",)))
        else:
            art = (_DE_DEF if np.definite else _DE_INDEF)[case][g]
            fused = {("zu", "dem"): "zum", ("zu", "der"): "zur", ("von", "dem"): "vom"}.get((contract, art))
            if fused:
                toks.append(Tok(fused, (f"{contract}.prep", f"{np.ref}.det")))
            else:
                if contract:
                    toks.append(Tok(contract, (f"{contract}.prep",)))
                toks.append(Tok(art, (f"{np.ref}.det",)))
        noun = sg if np.count == 1 else pl
        concepts: tuple[str, ...] = (f"{np.ref}.noun",)
        for slot, key in np.modifiers:
            adj = ADJECTIVES[key]
            if adj.kind == "material":
                noun = f"{adj.de}-{noun}"
                concepts = (f"{np.ref}.material", *concepts)
            else:
                toks.append(Tok(adj.de + de_adjective_ending(article, g, case), (f"{np.ref}.{slot}",)))
        toks.append(Tok(noun, concepts))
        return toks

    def subjects(self, subj: Sequence[Subject], tag: str) -> list[Tok]:
        toks = self.np(subj[0], "nom")
        if len(subj) > 1:
            toks += [Tok("und", (f"{tag}.and",)), *self.np(subj[1], "nom")]
        return toks

    def pp(self, pp: PP, tag: str) -> tuple[list[Tok], list[Tok]]:
        """The PP, and what goes to the clause end ("entfernt" of "von X entfernt")."""
        if pp.kind == "towards":
            return self._retag(self.np(pp.np, "dat", contract="zu"), "zu.prep", f"{tag}.goal"), []
        if pp.kind == "from":
            return (
                self._retag(self.np(pp.np, "dat", contract="von"), "von.prep", f"{tag}.from"),
                [Tok("entfernt", (f"{tag}.from",))],
            )
        words = [Tok(w, (f"{tag}.rel",)) for w in RELATIONS[pp.kind][1]]
        return words + self.np(pp.np, "dat"), []

    @staticmethod
    def _retag(toks: list[Tok], old: str, new: str) -> list[Tok]:
        for tok in toks:
            tok.concepts = tuple(new if c == old else c for c in tok.concepts)
        return toks

    def clause(self, c: Clause, mode: str = "main") -> list[Tok]:
        """mode: main (verb second), inv (verb first: questions, after a fronted clause), sub (verb last)."""
        tag = c.tag
        subj = self.subjects(c.subj, tag)
        plural = len(c.subj) > 1 or (isinstance(c.subj[0], NP) and c.subj[0].count > 1)
        middle: list[Tok] = []
        right: list[Tok] = []
        fronted: list[Tok] = []  # an object relative pronoun opens its clause: "den die Katze schiebt"
        if c.kind in ("intrans", "trans"):
            verb = VERBS[c.verb]  # type: ignore[index]
            if c.perfect:
                finite = Tok(verb.de[2], (f"{tag}.aux",))
                right = [Tok(verb.de[1], (f"{tag}.verb", f"{tag}.prt"))]
            elif verb.de_particle and mode == "sub":
                finite = Tok(verb.de_particle + verb.de[0], (f"{tag}.verb", f"{tag}.prt"))
            else:
                finite = Tok(verb.de[0], (f"{tag}.verb",))
                if verb.de_particle:
                    right = [Tok(verb.de_particle, (f"{tag}.prt",))]
            if verb.de_reflexive:
                middle.append(Tok("sich", (f"{tag}.verb",)))
            if isinstance(c.obj, Rel):
                fronted = self.np(c.obj, verb.de_case)
            elif c.obj is not None:
                middle += self.np(c.obj, verb.de_case)
            if c.pp is not None:
                pp, end = self.pp(c.pp, f"{tag}.pp")
                middle += pp
                right = end + right
        elif c.kind == "cop":
            finite = Tok("sind" if plural else "ist", (f"{tag}.cop",))
            middle = self.pp(c.pp, f"{tag}.pp")[0]  # type: ignore[arg-type]
        elif c.kind == "exist":
            finite = Tok("gibt", (f"{tag}.exist",))
            es = Tok("es", (f"{tag}.exist",))
            middle = self.np(c.subj[0], "acc") + self.pp(c.pp, f"{tag}.pp")[0]  # type: ignore[arg-type]
            subj = [es]
        elif c.kind == "measure":
            finite = Tok("ist", (f"{tag}.cop",))
            pp, right = self.pp(c.pp, f"{tag}.pp")  # type: ignore[arg-type]
            middle = [Tok(c.measure.replace(".", ","), (f"{tag}.num",)), Tok("Meter", (f"{tag}.unit",)), *pp]  # type: ignore[union-attr]
        else:
            raise ValueError(c.kind)
        adverb = [Tok(ADVERBS[c.adverb][1], (f"{tag}.adv",))] if c.adverb else []
        if mode == "sub":
            toks = fronted + subj + middle + right + [finite]
        elif mode == "inv" or adverb:
            toks = [*adverb, finite, *subj, *middle, *right]
        else:
            toks = [*subj, finite, *middle, *right]
        if c.manner:
            toks += [
                Tok("(", (f"{tag}.lpar",)),
                Tok(MANNER[c.manner][1], (f"{tag}.manner",)),
                Tok(")", (f"{tag}.rpar",)),
            ]
        return toks

    def sentence(self, plan: Plan) -> list[Tok]:
        end = Tok(plan.mark, ("p.end",))
        if plan.kind == "where":
            toks = [Tok("wo", ("m.where",)), Tok("ist", ("m.cop",)), *self.np(plan.main.subj[0], "nom"), end]
        elif plan.kind == "quote":
            # „Der Ball rollt“, sagt Tom. (not Tom sagt: „Der Ball rollt.“, whose ." Moses'
            # normaliser turns into ". and so reorders against the gold alignment)
            inner = self.clause(plan.main)
            _cap(inner)
            toks = [
                Tok("„", ("p.qopen",)),
                *inner,
                Tok("“", ("p.qclose",)),
                Tok(",", ("p.quotecomma",)),
                Tok(SAY[1], ("q.say",)),
                *self.np(plan.speaker, "nom"),  # type: ignore[arg-type]
                end,
            ]
        elif plan.kind == "look":
            toks = [Tok(LOOK[1], ("l.look",)), Tok(",", ("p.lookcomma",)), *self.clause(plan.main), end]
        elif plan.sub is not None:
            sub = [Tok(CONJUNCTIONS[plan.conj][1], ("s.conj",)), *self.clause(plan.sub, "sub")]  # type: ignore[index]
            if plan.sub_first:
                toks = [*sub, Tok(",", ("p.subcomma",)), *self.clause(plan.main, "inv"), end]
            else:
                toks = [*self.clause(plan.main), Tok(",", ("p.decomma",)), *sub, end]
        else:
            toks = [*self.clause(plan.main, "inv" if plan.kind == "question" else "main"), end]
        toks = _drop_dangling_commas(toks)
        _cap(toks)
        return toks


# -- Russian ----------------------------------------------------------------------------------------
def ru_adjective(stem_class: tuple[str, str], gender: str, case: str, animate: bool = False) -> str:
    """Russian adjective form; the accusative of an animate masculine noun is its genitive."""
    stem, cls = stem_class
    if case == "acc" and animate and gender in ("m", "pl"):
        case = "gen"
    return stem + RU_ENDINGS[cls][gender][case]


class Russian:
    lang = "ru"
    _CASE: ClassVar[dict[str, int]] = {"nom": 2, "acc": 3, "gen": 4, "dat": 5, "ins": 6}

    def np(self, np: Subject, case: str) -> list[Tok]:
        """A noun phrase in ``case``, then its PP and its relative clause (between commas)."""
        if isinstance(np, Name):
            return [Tok(NAMES[np.key][2], (f"{np.ref}.noun",), "PROPN")]
        if isinstance(np, Rel):  # который: gender (and animacy) of its noun, case of its own clause
            gender, animate = np.antecedent.entry.ru[0], np.antecedent.entry.ru[1]
            form = ru_adjective(("котор", "hard"), gender, case, animate)
            return [Tok(form, (f"{np.ref}.pron",), "PRON")]
        toks = self._bare_np(np, case)
        if np.pp is not None:
            toks += self.pp(np.pp, f"{np.ref}.pp")
        if np.rel is not None:
            tag = np.rel.tag
            toks += [
                Tok(",", (f"{tag}.open",), "PUNCT"),
                *self.clause(np.rel),
                Tok(",", (f"{tag}.close",), "PUNCT"),
            ]
        return toks

    def _bare_np(self, np: NP, case: str) -> list[Tok]:
        entry = np.entry.ru
        gender, animate = entry[0], entry[1]
        toks: list[Tok] = []
        if np.count > 1:  # 2-4 + genitive singular noun; adjectives genitive plural (nominative for feminine)
            toks.append(Tok(str(np.count), (f"{np.ref}.num",)))
            adj_gender, adj_case, noun_case = "pl", ("nom" if gender == "f" else "gen"), "gen"
        else:
            adj_gender, adj_case, noun_case = gender, case, case
        for slot, key in np.modifiers:
            toks.append(
                Tok(ru_adjective(ADJECTIVES[key].ru, adj_gender, adj_case, animate), (f"{np.ref}.{slot}",))
            )
        toks += [Tok(w, (f"{np.ref}.noun",)) for w in entry[self._CASE[noun_case]].split()]  # type: ignore[index]
        return toks

    def subjects(self, subj: Sequence[Subject], tag: str) -> list[Tok]:
        toks = self.np(subj[0], "nom")
        if len(subj) > 1:
            toks += [Tok("и", (f"{tag}.and",)), *self.np(subj[1], "nom")]
        return toks

    def pp(self, pp: PP, tag: str) -> list[Tok]:
        if pp.kind == "towards":
            return [Tok("к", (f"{tag}.goal",)), *self.np(pp.np, "dat")]
        if pp.kind == "from":
            return [Tok("от", (f"{tag}.from",)), *self.np(pp.np, "gen")]
        words, case = RELATIONS[pp.kind][2]
        return [Tok(w, (f"{tag}.rel",)) for w in words] + self.np(pp.np, case)

    @staticmethod
    def gender(subj: Subject) -> str:
        return NAMES[subj.key][4] if isinstance(subj, Name) else subj.entry.ru[0]

    def clause(self, c: Clause) -> list[Tok]:
        tag = c.tag
        subj = self.subjects(c.subj, tag)
        if c.kind in ("intrans", "trans"):
            verb = VERBS[c.verb]  # type: ignore[index]
            if c.perfect:
                form = verb.ru[{"m": 1, "f": 2, "n": 3}[self.gender(c.subj[0])]]
                vtok = Tok(form, (f"{tag}.verb", f"{tag}.aux", f"{tag}.prt"))
            else:
                vtok = Tok(verb.ru[0], (f"{tag}.verb", f"{tag}.prt"))
            toks = [*subj, vtok]
            if c.obj is not None:
                prep, case = verb.ru_object
                obj = [Tok(prep, (f"{tag}.verb",))] if prep else []
                obj += self.np(c.obj, case)
                # an object relative opens its clause: "мяч, за которым следует кошка"
                toks = obj + toks if isinstance(c.obj, Rel) else toks + obj
            if c.pp is not None:
                toks += self.pp(c.pp, f"{tag}.pp")
        elif c.kind == "cop":
            toks = subj + self.pp(c.pp, f"{tag}.pp")  # type: ignore[arg-type]
        elif c.kind == "exist":  # location first: "Рядом с коробкой есть 3 красных мяча."
            toks = [*self.pp(c.pp, f"{tag}.pp"), Tok("есть", (f"{tag}.exist",)), *subj]  # type: ignore[arg-type]
        elif c.kind == "measure":
            toks = [
                *subj,
                Tok("находится", (f"{tag}.cop",)),
                Tok("в", (f"{tag}.at",)),
                Tok(c.measure.replace(".", ","), (f"{tag}.num",)),
                Tok("метрах", (f"{tag}.unit",)),  # type: ignore[union-attr]
                *self.pp(c.pp, f"{tag}.pp"),
            ]  # type: ignore[arg-type]
        else:
            raise ValueError(c.kind)
        if c.adverb:
            toks.insert(0, Tok(ADVERBS[c.adverb][2], (f"{tag}.adv",)))
        if c.manner:
            toks += [
                Tok("(", (f"{tag}.lpar",)),
                Tok(MANNER[c.manner][2], (f"{tag}.manner",)),
                Tok(")", (f"{tag}.rpar",)),
            ]
        return toks

    def sentence(self, plan: Plan) -> list[Tok]:
        end = Tok(plan.mark, ("p.end",))
        if plan.kind == "where":
            toks = [Tok("где", ("m.where",)), *self.np(plan.main.subj[0], "nom"), end]
        elif plan.kind == "quote":
            inner = self.clause(plan.main)
            _cap(inner)
            toks = [
                *self.np(plan.speaker, "nom"),
                Tok(SAY[2], ("q.say",)),
                Tok(":", ("p.colon",)),  # type: ignore[arg-type]
                Tok("«", ("p.qopen",)),
                *inner,
                Tok("»", ("p.qclose",)),
                end,
            ]
        elif plan.kind == "look":
            toks = [Tok(LOOK[2], ("l.look",)), Tok(",", ("p.lookcomma",)), *self.clause(plan.main), end]
        elif plan.sub is not None:
            sub = [*(Tok(w, ("s.conj",)) for w in CONJUNCTIONS[plan.conj][2]), *self.clause(plan.sub)]  # type: ignore[index]
            if plan.sub_first:
                toks = [*sub, Tok(",", ("p.subcomma",)), *self.clause(plan.main), end]
            else:
                toks = [*self.clause(plan.main), Tok(",", ("p.rucomma",)), *sub, end]
        else:
            toks = [*self.clause(plan.main), end]
        toks = _drop_dangling_commas(toks)
        _cap(toks)
        return toks


# -- French -----------------------------------------------------------------------------------------
_VOWELS = set("aeiouyàâäéèêëîïôöœûüùAEIOUYÀÂÉÈÊÎÔŒÛ")
_H_MUET = {"harmonica"}


def _vowel_initial(word: str) -> bool:
    return word[:1] in _VOWELS or word.lower() in _H_MUET


def _fr_elide(toks: list[Tok]) -> list[Tok]:
    """le/la/de/que + vowel -> l'/d'/qu' glued to the next word, as French writes it."""
    for tok, nxt in itertools.pairwise(toks):
        if tok.form.lower() in ("le", "la", "de", "que") and _vowel_initial(nxt.form):
            tok.form = tok.form[:-1] + "'"
    return toks


class French:
    lang = "fr"

    def np(self, np: Subject, prep: str = "") -> list[Tok]:
        """A noun phrase; ``prep`` = "de" fuses with le/les into du/des. Then its PP and relative clause."""
        pre = [Tok(prep, (f"{prep}.prep",))] if prep else []
        if isinstance(np, Name):
            return [*pre, Tok(NAMES[np.key][3], (f"{np.ref}.noun",), "PROPN")]
        if isinstance(np, Rel):
            return [Tok("qui", (f"{np.ref}.pron",), "PRON")]
        toks = self._bare_np(np, pre, prep)
        if np.pp is not None:
            toks += self.pp(np.pp, f"{np.ref}.pp")
        if np.rel is not None:
            toks += self.clause(np.rel)
        return toks

    def _bare_np(self, np: NP, pre: list[Tok], prep: str) -> list[Tok]:
        gender, sg, pl = np.entry.fr
        number = 1 if np.count > 1 else 0
        index = (0 if gender == "m" else 1) + 2 * number
        before: list[Tok] = []
        after: list[Tok] = []
        for slot, key in np.modifiers:
            adj = ADJECTIVES[key]
            if adj.kind == "material":
                after += [Tok("en", (f"{np.ref}.material",)), Tok(adj.fr[0], (f"{np.ref}.material",))]
            elif adj.kind == "size":
                before.append(Tok(adj.fr[index], (f"{np.ref}.{slot}",)))
            else:
                after += [Tok(w, (f"{np.ref}.{slot}",)) for w in adj.fr[index].split()]
        noun = [Tok(w, (f"{np.ref}.noun",)) for w in (pl if number else sg).split()]
        first = (before or noun)[0].form
        if np.count > 1:
            det = [Tok(str(np.count), (f"{np.ref}.num",))]
        elif np.definite:
            art = "le" if gender == "m" else "la"
            if prep == "de" and art == "le" and not _vowel_initial(first):
                pre, det = [], [Tok("du", ("de.prep", f"{np.ref}.det"))]
            else:
                det = [Tok(art, (f"{np.ref}.det",))]
        else:
            det = [Tok("un" if gender == "m" else "une", (f"{np.ref}.det",))]
        return pre + det + before + noun + after

    def subjects(self, subj: Sequence[Subject], tag: str) -> list[Tok]:
        toks = self.np(subj[0])
        if len(subj) > 1:
            toks += [Tok("et", (f"{tag}.and",)), *self.np(subj[1])]
        return toks

    def pp(self, pp: PP, tag: str) -> list[Tok]:
        if pp.kind == "towards":
            return [Tok("vers", (f"{tag}.goal",)), *self.np(pp.np)]
        words = ("de",) if pp.kind == "from" else RELATIONS[pp.kind][3]
        concept = f"{tag}.from" if pp.kind == "from" else f"{tag}.rel"
        if words[-1] == "de":
            toks = [Tok(w, (concept,)) for w in words[:-1]] + self.np(pp.np, prep="de")
            for tok in toks:
                tok.concepts = tuple(concept if c == "de.prep" else c for c in tok.concepts)
            return toks
        return [Tok(w, (concept,)) for w in words] + self.np(pp.np)

    @staticmethod
    def _feminine(subj: Subject) -> bool:
        return NAMES[subj.key][4] == "f" if isinstance(subj, Name) else subj.entry.fr[0] == "f"

    def clause(self, c: Clause, question: bool = False) -> list[Tok]:
        tag = c.tag
        subj = self.subjects(c.subj, tag)
        plural = len(c.subj) > 1
        if c.kind in ("intrans", "trans"):
            verb = VERBS[c.verb]  # type: ignore[index]
            toks = [*subj]
            if verb.fr_reflexive:
                toks.append(Tok("se", (f"{tag}.verb",)))
            if c.perfect:
                participle = verb.fr[1]
                # être: the participle agrees with the subject; avoir: with a preceding direct
                # object, i.e. an object relative ("la balle que le chat a poussée")
                agrees_with = c.subj[0] if verb.fr[2] == "est" else c.obj if isinstance(c.obj, Rel) else None
                if agrees_with is not None and self._feminine(agrees_with):
                    participle += "e"
                toks += [Tok(verb.fr[2], (f"{tag}.aux",)), Tok(participle, (f"{tag}.verb", f"{tag}.prt"))]
            else:
                toks.append(Tok(verb.fr[0], (f"{tag}.verb", f"{tag}.prt")))
            if isinstance(c.obj, Rel):
                toks.insert(0, Tok("que", (f"{c.obj.ref}.pron",), "PRON"))
            elif c.obj is not None:
                toks += self.np(c.obj)
            if c.pp is not None:
                toks += self.pp(c.pp, f"{tag}.pp")
        elif c.kind == "cop":
            if question:
                feminine = all(self._feminine(s) for s in c.subj)
                form = (
                    ("sont-elles" if feminine else "sont-ils")
                    if plural
                    else ("est-elle" if feminine else "est-il")
                )
            else:
                form = "sont" if plural else "est"
            toks = [*subj, Tok(form, (f"{tag}.cop",)), *self.pp(c.pp, f"{tag}.pp")]  # type: ignore[arg-type]
        elif c.kind == "exist":
            toks = [
                Tok("il", (f"{tag}.exist",)),
                Tok("y", (f"{tag}.exist",)),
                Tok("a", (f"{tag}.exist",)),
                *subj,
                *self.pp(c.pp, f"{tag}.pp"),
            ]  # type: ignore[arg-type]
        elif c.kind == "measure":
            number = c.measure.replace(".", ",")  # type: ignore[union-attr]
            unit = "mètre" if float(c.measure) < 2 else "mètres"  # type: ignore[arg-type]
            toks = [
                *subj,
                Tok("est", (f"{tag}.cop",)),
                Tok("à", (f"{tag}.at",)),
                Tok(number, (f"{tag}.num",)),
                Tok(unit, (f"{tag}.unit",)),
                *self.pp(c.pp, f"{tag}.pp"),
            ]  # type: ignore[arg-type]
        else:
            raise ValueError(c.kind)
        if c.adverb:
            toks.insert(0, Tok(ADVERBS[c.adverb][3], (f"{tag}.adv",)))
        if c.manner:
            toks += [
                Tok("(", (f"{tag}.lpar",)),
                Tok(MANNER[c.manner][3], (f"{tag}.manner",)),
                Tok(")", (f"{tag}.rpar",)),
            ]
        return toks

    def sentence(self, plan: Plan) -> list[Tok]:
        end = Tok(plan.mark, ("p.end",))
        if plan.kind == "where":
            toks = [Tok("où", ("m.where",)), Tok("est", ("m.cop",)), *self.np(plan.main.subj[0]), end]
        elif plan.kind == "quote":
            inner = _fr_elide(self.clause(plan.main))
            _cap(inner)
            toks = [
                *self.np(plan.speaker),
                Tok(SAY[3], ("q.say",)),
                Tok(":", ("p.colon",)),  # type: ignore[arg-type]
                Tok("«", ("p.qopen",)),
                *inner,
                end,
                Tok("»", ("p.qclose",)),
            ]
        elif plan.kind == "look":
            toks = [Tok(LOOK[3], ("l.look",)), Tok(",", ("p.lookcomma",)), *self.clause(plan.main), end]
        elif plan.sub is not None:
            sub = [*(Tok(w, ("s.conj",)) for w in CONJUNCTIONS[plan.conj][3]), *self.clause(plan.sub)]  # type: ignore[index]
            if plan.sub_first:
                toks = [*sub, Tok(",", ("p.subcomma",)), *self.clause(plan.main), end]
            else:
                toks = [*self.clause(plan.main), *sub, end]
        else:
            toks = [*self.clause(plan.main, question=plan.kind == "question"), end]
        toks = _fr_elide(toks)
        _cap(toks)
        return toks


REALISERS = {"en": English(), "de": German(), "ru": Russian(), "fr": French()}
TARGETS = ("de", "ru", "fr")
