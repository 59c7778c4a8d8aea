"""Sentence plans: the language-neutral meaning of one toyworld sentence, and the sampler that draws them.

A plan is what all four languages and the picture are rendered from, so line i of every file
describes the same scene. Every mention of an ambiguous noun (bat, bank, crane, seal) carries a cue
in its own sentence (a verb or a modifier only that sense takes), so the sense is decidable from
the source alone, which a contrastive word-sense test needs.
"""

from __future__ import annotations

import dataclasses
import random
from dataclasses import dataclass, field

from nmtvariants.corpora.toyworld_lexicon import (
    ADJECTIVES,
    ADVERBS,
    AMBIGUOUS,
    CONJUNCTIONS,
    MANNER,
    MEASURES,
    NAMES,
    NOUNS,
    RELATIONS,
    VERBS,
    Noun,
)


@dataclass(frozen=True)
class NP:
    """A noun phrase. ``ref`` names the mention (alignment), ``obj`` the scene object (picture)."""

    ref: str
    obj: int
    noun: str
    sense: str | None = None
    size: str | None = None
    colour: str | None = None
    quality: str | None = None
    material: str | None = None
    count: int = 1
    definite: bool = True
    pp: PP | None = None  # a relation modifying the noun ("the ball near the box"): nmod
    rel: Clause | None = None  # a relative clause ("the ball that rolls / that Tom hits"): acl:relcl

    @property
    def entry(self) -> Noun:
        return AMBIGUOUS[self.noun].senses[self.sense] if self.sense else NOUNS[self.noun]

    @property
    def modifiers(self) -> list[tuple[str, str]]:
        """(slot, adjective key) in English order: size, colour/quality, material."""
        slots = (
            ("size", self.size),
            ("colour", self.colour),
            ("quality", self.quality),
            ("material", self.material),
        )
        return [(slot, key) for slot, key in slots if key]


@dataclass(frozen=True)
class Name:
    ref: str
    key: str
    obj: int = -1


@dataclass(frozen=True)
class Rel:
    """The relative pronoun subject of ``antecedent``'s relative clause ("that", der/die/das, который).

    ``antecedent`` is the noun phrase without its own pp/rel (no cycle); it carries the gender and
    class the pronoun and the verb agree with, however far away the noun stands.
    """

    ref: str
    antecedent: NP

    @property
    def obj(self) -> int:
        return self.antecedent.obj

    @property
    def entry(self) -> Noun:
        return self.antecedent.entry


Subject = NP | Name | Rel


@dataclass(frozen=True)
class PP:
    """A relation ("left", "near", ...) or "towards", with its noun phrase."""

    kind: str
    np: NP


@dataclass(frozen=True)
class Clause:
    """kind: intrans, trans, cop (be + relation), exist (there is/are), measure (N metres from)."""

    kind: str
    subj: tuple[Subject, ...]
    tag: str = "m"  # prefix of the clause's alignment concepts
    verb: str | None = None
    obj: NP | Rel | None = None
    pp: PP | None = None
    perfect: bool = False
    adverb: str | None = None
    manner: str | None = None
    measure: str | None = None


@dataclass(frozen=True)
class Plan:
    """kind: plain, question, where, sub (with conj; ``sub_first`` fronts it), quote, look."""

    kind: str
    main: Clause
    mark: str = "."
    sub: Clause | None = None
    conj: str | None = None
    sub_first: bool = False
    speaker: Name | None = None
    objects: tuple[NP, ...] = field(default=(), compare=False)
    relations: tuple[tuple[int, str, int], ...] = field(default=(), compare=False)


def _same(a: NP, b: NP) -> bool:
    return (a.noun, a.sense, a.modifiers) == (b.noun, b.sense, b.modifiers)


def _pick(rng: random.Random, weights: dict[str, float]) -> str:
    keys = list(weights)
    return rng.choices(keys, weights=[weights[k] for k in keys])[0]


_NOUN_W = {k: n.weight for k, n in NOUNS.items()}
_ADJ_W = {
    kind: {k: a.weight for k, a in ADJECTIVES.items() if a.kind == kind}
    for kind in ("size", "colour", "material")
}
_NAME_W = {k: v[5] for k, v in NAMES.items()}
_AMB_W = {k: a.weight for k, a in AMBIGUOUS.items()}

TEMPLATES = {
    "motion": 16,
    "rest": 8,
    "trans": 16,
    "cop": 12,
    "exist": 8,
    "measure": 6,
    "sub": 12,
    "question": 5,
    "where": 3,
    "quote": 4,
    "look": 4,
    "coord": 4,
    "cue": 10,
}


# How often a subject or object of a main or subordinate clause gets a noun-modifying relation, and
# a relative clause. Both lengthen sentences; the first makes PP attachment ambiguous ("Tom hits the
# ball near the box": nmod here, obl elsewhere), the second puts agreement at a distance (the German
# and Russian relative pronoun agrees with its noun across the noun's own PP, the main verb follows
# the whole clause).
NMOD_RATE = 0.25
RELATIVE_RATE = 0.25
OBJECT_RELATIVE_RATE = 0.4  # of relative clauses: the pronoun's case then comes from its own verb


VERB_CUE_RATE = 0.4  # of ambiguous nouns in a clause's subject or object


def _subject_verbs(cls: str) -> tuple[dict[str, float], dict[str, float]]:
    """Intransitive and transitive verbs (with weights) whose subject can be of class ``cls``; the
    ambiguous nouns' senses have disjoint classes and verbs, so such a verb cues the sense."""
    intransitive = {v: e.weight for v, e in VERBS.items() if not e.transitive and cls in e.subjects}
    transitive = {v: e.weight for v, e in VERBS.items() if e.transitive and cls in e.subjects}
    return intransitive, transitive


class PlanSampler:
    """Draws plans from one ``random.Random``; all randomness comes from that instance."""

    def __init__(
        self, rng: random.Random, ambiguity_rate: float = 0.06, templates: dict[str, float] | None = None
    ):
        self.rng = rng
        self.ambiguity_rate = ambiguity_rate
        self.templates = templates or TEMPLATES
        self._objects: list[NP] = []
        self._relations: list[tuple[int, str, int]] = []
        self._nested = 0

    # -- noun phrases ------------------------------------------------------------------------------
    def _modifiers(self, np: NP, allow_material: bool = True) -> NP:
        rng = self.rng
        changes: dict[str, object] = {}
        if rng.random() < 0.35:
            changes["size"] = _pick(rng, _ADJ_W["size"])
        if rng.random() < 0.6:
            changes["colour"] = _pick(rng, _ADJ_W["colour"])
        if allow_material and np.entry.cls != "animal" and rng.random() < 0.15:
            changes["material"] = _pick(rng, _ADJ_W["material"])
        return dataclasses.replace(np, **changes)

    def _new(self, np: NP) -> NP:
        np = dataclasses.replace(np, obj=len(self._objects))
        self._objects.append(np)
        return np

    def np(
        self,
        ref: str,
        classes: tuple[str, ...] = ("round", "thing", "animal"),
        ambiguous: bool = True,
        avoid: Subject | None = None,
        decorate: bool = False,
    ) -> NP:
        """A noun phrase for any position; an ambiguous noun always gets its cue: a modifier or, in a
        decorated position, sometimes the verb of its relative clause.

        ``avoid``: redraw (a few times) a phrase identical to this one ("the box hits the box").
        ``decorate``: a clause's subject or object, which may get a PP and a relative clause (one
        level deep: the phrases inside them stay plain).
        """
        for _ in range(5):
            np = self._draw_np(ref, classes, ambiguous)
            if not (isinstance(avoid, NP) and _same(np, avoid)):
                break
        np = self._new(np)
        if not decorate or self._nested:
            return np
        if np.sense and self.rng.random() < VERB_CUE_RATE:
            return self._decorate(self._verb_cued(np), cue=True)
        return self._decorate(np)

    def _verb_cued(self, np: NP) -> NP:
        """An ambiguous noun cued by the verb of its relative clause instead of a modifier ("the bat
        that sleeps"): the sense is drawn by `Ambiguous.sense_weights` among senses that take a verb."""
        word = AMBIGUOUS[np.noun]
        senses = {
            s: word.sense_weights.get(s, 1.0)
            for s in sorted(word.senses)
            if any(_subject_verbs(word.senses[s].cls))  # the river bank takes no verb
        }
        plain = self._modifiers(NP(np.ref, np.obj, np.noun, _pick(self.rng, senses)), allow_material=False)
        self._objects[np.obj] = plain
        return plain

    def _decorate(self, np: NP, cue: bool = False) -> NP:
        """Maybe a PP, maybe a relative clause; ``cue``: a subject relative whose verb picks the sense."""
        rng = self.rng
        self._nested += 1
        if rng.random() < NMOD_RATE:
            np = dataclasses.replace(np, pp=self._relation(f"{np.ref}.pp", np))
        if cue or rng.random() < RELATIVE_RATE:
            np = dataclasses.replace(np, rel=self._relative(np, subject=cue))
        self._nested -= 1
        return np

    def _relative(self, np: NP, subject: bool = False) -> Clause | None:
        """A relative clause on ``np``: its subject ("that rolls") with a verb its class takes, or
        (``OBJECT_RELATIVE_RATE``, unless ``subject``) its object ("that the cat pushes"); None if its
        class takes no verb."""
        rng = self.rng
        tag = f"{np.ref}.rc"
        bare = dataclasses.replace(np, pp=None, rel=None)
        if not subject and rng.random() < OBJECT_RELATIVE_RATE:
            verb = _pick(
                rng, {v: e.weight for v, e in VERBS.items() if e.transitive and "round" in e.subjects}
            )
            return self.trans(tag, verb=verb, front=False, obj=Rel(f"{tag}.obj", bare))
        pronoun = Rel(f"{tag}.subj", bare)
        intransitive, transitive = _subject_verbs(np.entry.cls)
        if transitive and (not intransitive or rng.random() < 0.5):
            return self.trans(tag, pronoun, _pick(rng, transitive), front=False)
        if intransitive:
            return self.intrans(tag, pronoun, _pick(rng, intransitive), front=False)
        return None

    def _draw_np(self, ref: str, classes: tuple[str, ...], ambiguous: bool) -> NP:
        rng = self.rng
        if ambiguous and rng.random() < self.ambiguity_rate:
            word = _pick(rng, _AMB_W)
            cued = [s for s, cues in AMBIGUOUS[word].cue_adjectives.items() if cues]
            sense = _pick(rng, {s: AMBIGUOUS[word].sense_weights.get(s, 1.0) for s in cued})
            cue = rng.choice(AMBIGUOUS[word].cue_adjectives[sense])
            np = self._modifiers(NP(ref, 0, word, sense), allow_material=False)
            slot = ADJECTIVES[cue].kind
            np = dataclasses.replace(np, **{slot: cue})
            if slot == "quality":
                np = dataclasses.replace(np, colour=None)
            return np
        weights = {k: w for k, w in _NOUN_W.items() if NOUNS[k].cls in classes}
        return self._modifiers(NP(ref, 0, _pick(rng, weights)))

    def cue_subject(self, ref: str) -> tuple[NP, str]:
        """An ambiguous noun as the subject of a verb that only one of its senses takes."""
        rng = self.rng
        word = _pick(rng, _AMB_W)
        sense = _pick(
            rng, {s: AMBIGUOUS[word].sense_weights.get(s, 1.0) for s in sorted(AMBIGUOUS[word].senses)}
        )
        entry = AMBIGUOUS[word].senses[sense]
        verbs = [
            v
            for v, e in VERBS.items()
            if entry.cls in e.subjects and not (e.transitive and entry.cls != "machine")
        ]
        if not verbs:  # the river bank takes no verb: it is cued by its adjective
            cue = rng.choice(AMBIGUOUS[word].cue_adjectives[sense])
            return self._new(NP(ref, 0, word, sense, quality=cue)), ""
        verb = rng.choice(sorted(verbs))
        np = NP(ref, 0, word, sense)
        if rng.random() < 0.4 and entry.cls not in ("building",):
            np = dataclasses.replace(np, colour=_pick(rng, _ADJ_W["colour"]))
        if rng.random() < 0.3:
            np = dataclasses.replace(np, size=_pick(rng, _ADJ_W["size"]))
        return self._new(np), verb

    def subject(self, ref: str, classes: tuple[str, ...]) -> Subject:
        if "name" in classes and self.rng.random() < 0.25:
            return Name(ref, _pick(self.rng, _NAME_W))
        return self.np(ref, tuple(c for c in classes if c != "name"), decorate=True)

    # -- clauses -----------------------------------------------------------------------------------
    def _relation(self, ref: str, figure: NP | None) -> PP:
        ground = self.np(ref, avoid=figure)
        kind = self.rng.choice(sorted(RELATIONS))
        if figure is not None:
            self._relations.append((figure.obj, kind, ground.obj))
        return PP(kind, ground)

    def _adverbs(self, allow_front: bool = True) -> dict[str, str | None]:
        rng = self.rng
        adverb = rng.choice(sorted(ADVERBS)) if allow_front and rng.random() < 0.12 else None
        manner = rng.choice(sorted(MANNER)) if rng.random() < 0.06 else None
        return {"adverb": adverb, "manner": manner}

    def intrans(
        self, tag: str, subj: NP | Rel | None = None, verb: str | None = None, front: bool = True
    ) -> Clause:
        rng = self.rng
        if subj is None:
            subj = self.np(f"{tag}.subj", ("round", "thing", "animal"), ambiguous=False, decorate=True)
        if verb is None:
            cls = subj.entry.cls
            options = {v: e.weight for v, e in VERBS.items() if not e.transitive and cls in e.subjects}
            verb = _pick(rng, options)
        entry = VERBS[verb]
        pp = None
        if entry.goal and rng.random() < 0.8:
            pp = PP("towards", self.np(f"{tag}.pp", avoid=subj))
            self._relations.append((subj.obj, "near", pp.np.obj))
        elif not entry.goal and rng.random() < 0.6:
            pp = self._relation(f"{tag}.pp", subj)
        perfect = entry.perfect and rng.random() < 0.15
        return Clause("intrans", (subj,), tag, verb, None, pp, perfect, **self._adverbs(front))

    def trans(
        self,
        tag: str,
        subj: Subject | None = None,
        verb: str | None = None,
        front: bool = True,
        obj: Rel | None = None,
    ) -> Clause:
        rng = self.rng
        if verb is None:
            verb = _pick(
                rng, {v: e.weight for v, e in VERBS.items() if e.transitive and "round" in e.subjects}
            )
        entry = VERBS[verb]
        if subj is None:
            subj = self.subject(f"{tag}.subj", entry.subjects)
        if obj is None:
            obj = self.np(f"{tag}.obj", avoid=subj, decorate=True)
        pp = None
        if entry.goal and rng.random() < 0.3:
            pp = PP("towards", self.np(f"{tag}.pp"))
        perfect = entry.perfect and rng.random() < 0.15
        return Clause("trans", (subj,), tag, verb, obj, pp, perfect, **self._adverbs(front))

    def cop(self, tag: str, coord: bool = False, front: bool = True) -> Clause:
        first = self.np(f"{tag}.subj", decorate=not coord)
        subj: tuple[Subject, ...] = (first,)
        if coord:
            subj = (first, self.np(f"{tag}.subj2", avoid=first))
        pp = self._relation(f"{tag}.pp", first)
        for other in subj[1:]:
            self._relations.append((other.obj, pp.kind, pp.np.obj))  # type: ignore[union-attr]
        adverbs = self._adverbs(front)
        return Clause("cop", subj, tag, pp=pp, adverb=adverbs["adverb"])

    # -- sentences ---------------------------------------------------------------------------------
    def sample(self) -> Plan:
        self._objects, self._relations = [], []
        rng = self.rng
        template = _pick(rng, self.templates)
        plan = self._template(template)
        return dataclasses.replace(plan, objects=tuple(self._objects), relations=tuple(self._relations))

    def _template(self, template: str) -> Plan:
        rng = self.rng
        if template == "motion":
            subj = self.np("m.subj", ("round", "thing", "animal"), ambiguous=False, decorate=True)
            movers = {
                v: e.weight
                for v, e in VERBS.items()
                if e.goal and not e.transitive and subj.entry.cls in e.subjects
            }
            return Plan("plain", self.intrans("m", subj, _pick(rng, movers)))
        if template == "rest":
            subj = self.np("m.subj", ("round", "thing", "animal"), ambiguous=False, decorate=True)
            rest = {
                v: e.weight
                for v, e in VERBS.items()
                if not e.goal and not e.transitive and subj.entry.cls in e.subjects
            }
            return Plan("plain", self.intrans("m", subj, _pick(rng, rest)))
        if template == "trans":
            return Plan("plain", self.trans("m"))
        if template == "cop":
            return Plan("plain", self.cop("m"))
        if template == "coord":
            return Plan("plain", self.cop("m", coord=True))
        if template == "question":
            return Plan("question", self.cop("m", front=False), mark="?")
        if template == "where":
            return Plan("where", Clause("cop", (self.np("m.subj"),), "m"), mark="?")
        if template == "exist":
            np = self.np("m.subj", ambiguous=False)
            count = rng.choice((2, 2, 3, 3, 4)) if rng.random() < 0.5 else 1
            np = dataclasses.replace(np, count=count, definite=False)
            self._objects[np.obj] = np
            pp = self._relation("m.pp", np)
            return Plan("plain", Clause("exist", (np,), "m", pp=pp))
        if template == "measure":
            subj = self.np("m.subj")
            ground = self.np("m.pp", avoid=subj)
            return Plan(
                "plain", Clause("measure", (subj,), "m", pp=PP("from", ground), measure=rng.choice(MEASURES))
            )
        if template == "sub":
            conj = rng.choice(sorted(CONJUNCTIONS))
            sub = self._any_clause("s")
            main = self._any_clause("m")
            return Plan("plain", main, sub=sub, conj=conj, sub_first=conj == "when" or rng.random() < 0.3)
        if template == "quote":
            speaker = Name("spk", _pick(rng, _NAME_W))
            return Plan("quote", self._any_clause("m", front=False), speaker=speaker)
        if template == "look":
            return Plan("look", self.intrans("m", front=False), mark="!")
        # "cue": an ambiguous noun as the subject of the verb that picks its sense.
        subj, verb = self.cue_subject("m.subj")
        if not verb:
            return Plan("plain", Clause("cop", (subj,), "m", pp=self._relation("m.pp", subj)))
        if VERBS[verb].transitive:
            return Plan("plain", self.trans("m", subj, verb))
        mark = "!" if rng.random() < 0.1 else "."
        return Plan("plain", self.intrans("m", subj, verb), mark=mark)

    def _any_clause(self, tag: str, front: bool = False) -> Clause:
        choice = self.rng.random()
        if choice < 0.4:
            return self.intrans(tag, front=front)
        if choice < 0.75:
            return self.trans(tag, front=front)
        return self.cop(tag, front=front)
