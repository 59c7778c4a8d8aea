"""toyworld: the embedded default corpus, generated offline from a fixed seed.

It stands in for real data in the default run and in tests, so it has to exercise every stage of
the four studies: raw text in four languages (English source; German-, Russian- and French-like
targets with reordering, agreement, Cyrillic, compounds, numbers, quotes), gold dependency trees of
the source over Moses tokens (PASCAL, LISA), gold word alignments (AER), target POS tags (decoder-side
breakdowns), one picture per sentence (multimodal decoding) and a contrastive word-sense test set
(ContraWSD).

Gold annotations index *words*: the Moses tokens of the raw text without hyphen splitting, which are
also the tokens of the normalised text (the generator writes nothing Moses' normaliser reorders). The
workflow splits hyphens (``-a``: ``dark-blue`` -> ``dark @-@ blue``) and applies BPE after that;
`nmtvariants.text.subword_map.word_ids` maps every preprocessed token back to its word, which the
tests check line by line through the configured chain.

Layout under ``outdir``::

    raw/{split}.{en,de,ru,fr}   raw/{split}.en.conllu   raw/{split}.en-{de,ru,fr}.align
    raw/{split}.{de,ru,fr}.pos  (UD tags of the target's Moses tokens, one line per sentence)
    images/{split}/{index:06d}.png   image_splits/{split}.txt   contrawsd/en-de.json   manifest.json

Every random choice comes from ``random.Random`` instances seeded with the seed and the split name,
so the same seed and sizes give byte-identical files. The text of a split does not depend on the
image size, and the valid/test/ContraWSD sentences never repeat a training sentence.
"""

from __future__ import annotations

import hashlib
import json
import logging
import random
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from nmtvariants.corpora.toyworld_contrawsd import contrawsd_item, sense_counts
from nmtvariants.corpora.toyworld_grammar import REALISERS, TARGETS, Tok, align, detokenize
from nmtvariants.corpora.toyworld_image import render_png
from nmtvariants.corpora.toyworld_plan import TEMPLATES, Plan, PlanSampler
from nmtvariants.corpora.toyworld_pos import pos_line
from nmtvariants.errors import ConfigError
from nmtvariants.fileio import PathLike, atomic_write
from nmtvariants.syntax.conllu import format_sentence, make_sentence

log = logging.getLogger(__name__)

LANGUAGES = ("en", "de", "ru", "fr")
SPLITS = ("train", "valid", "test")
MAX_RETRIES = 1000
# The longest English sentence, in Moses tokens (punctuation included); longer plans are redrawn. The
# toy world is sized for the tiny preset on two cores: without the cap 15% of the sentences have 20
# tokens or more (up to 52), and the demo's tiny models needed 1,600 updates instead of 1,000 to learn
# them (benchmarks/results/toy_world_length.md). Relative clauses stay in 17% of the sentences (24%
# before), noun-modifying PPs in 31% (38%), adverbial clauses in 3% (11%): toy_world_stats.md.
MAX_SOURCE_TOKENS = 20


@dataclass
class Rendered:
    """One plan rendered in every language."""

    plan: Plan
    tokens: dict[str, list[Tok]]
    text: dict[str, str]


def render(plan: Plan) -> Rendered:
    tokens = {lang: REALISERS[lang].sentence(plan) for lang in LANGUAGES}
    text = {lang: detokenize([t.form for t in toks], lang) for lang, toks in tokens.items()}
    return Rendered(plan, tokens, text)


def space_after(forms: Sequence[str], text: str) -> list[bool]:
    """Whether a space follows each token in ``text`` (for CoNLL-U ``SpaceAfter=No``)."""
    out, pos = [], 0
    for form in forms:
        if not text.startswith(form, pos):
            raise ValueError(f"token {form!r} not found at offset {pos} of {text!r}")
        pos += len(form)
        spaced = text[pos : pos + 1] == " "
        out.append(spaced)
        pos += spaced
    return out


def conllu_block(tokens: Sequence[Tok], sent_id: str, text: str) -> str:
    """The gold UD tree of an English sentence as a CoNLL-U block."""
    position = {id(tok): i + 1 for i, tok in enumerate(tokens)}
    heads = [0 if tok.head is None else position[id(tok.head)] for tok in tokens]
    deprels = ["root" if tok.head is None else tok.deprel for tok in tokens]
    forms = [tok.form for tok in tokens]
    sentence = make_sentence(
        forms,
        heads,
        deprels,
        upos=[t.upos for t in tokens],
        lemmas=[t.lemma for t in tokens],
        space_after=space_after(forms, text),
        comments=[f"# sent_id = {sent_id}", f"# text = {text}"],
    )
    return format_sentence(sentence)


def generate_split(rng: random.Random, size: int, exclude: set[str] | None = None) -> list[Rendered]:
    """``size`` rendered sentences of at most MAX_SOURCE_TOKENS English tokens; with ``exclude``,
    English sentences in it (or repeated) are redrawn."""
    sampler = PlanSampler(rng)
    out: list[Rendered] = []
    for _ in range(size):
        for _attempt in range(MAX_RETRIES):
            item = render(sampler.sample())
            short = len(item.tokens["en"]) <= MAX_SOURCE_TOKENS
            if short and (exclude is None or item.text["en"] not in exclude):
                break
        else:
            raise RuntimeError(
                f"toyworld: no new sentence of <= {MAX_SOURCE_TOKENS} tokens in {MAX_RETRIES} tries"
            )
        if exclude is not None:
            exclude.add(item.text["en"])
        out.append(item)
    return out


class _Writer:
    """Writes files atomically under ``root`` and records their sha256 for the manifest."""

    def __init__(self, root: Path):
        self.root = root
        self.files: list[dict[str, object]] = []

    def bytes(self, relative: str, data: bytes) -> None:
        with atomic_write(self.root / relative, "wb") as out:
            out.write(data)
        self.files.append({"path": relative, "bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()})

    def lines(self, relative: str, lines: Sequence[str]) -> None:
        self.bytes(relative, "".join(line + "\n" for line in lines).encode("utf-8"))


def _check_sizes(sizes: dict[str, int], image_size: int, contrawsd: int) -> None:
    for name, value in {**sizes, "contrawsd": contrawsd}.items():
        if value < 1:
            raise ConfigError(f"toyworld --{name}: {value} sentences requested; give a positive number")
    if not 8 <= image_size <= 1024:
        raise ConfigError(f"toyworld --image-size: {image_size}; give a size between 8 and 1024 pixels")


def generate(
    outdir: PathLike,
    seed: int = 1234,
    train: int = 20000,
    valid: int = 500,
    test: int = 500,
    image_size: int = 64,
    contrawsd: int = 300,
) -> dict[str, object]:
    """Generate the whole corpus under ``outdir``; return the manifest (also written as manifest.json)."""
    sizes = {"train": train, "valid": valid, "test": test}
    _check_sizes(sizes, image_size, contrawsd)
    root = Path(outdir)
    writer = _Writer(root)
    seen: set[str] = set()
    splits: dict[str, list[Rendered]] = {}
    for split in SPLITS:
        rng = random.Random(f"toyworld:{seed}:{split}")
        splits[split] = generate_split(rng, sizes[split], exclude=None if split == "train" else seen)
        if split == "train":
            seen.update(item.text["en"] for item in splits[split])
        log.info("toyworld: %s: %d sentences", split, len(splits[split]))

    for split, items in splits.items():
        for lang in LANGUAGES:
            writer.lines(f"raw/{split}.{lang}", [item.text[lang] for item in items])
        conllu = "".join(
            conllu_block(item.tokens["en"], f"{split}-{i:06d}", item.text["en"])
            for i, item in enumerate(items)
        )
        writer.bytes(f"raw/{split}.en.conllu", conllu.encode("utf-8"))
        for tgt in TARGETS:
            writer.lines(
                f"raw/{split}.en-{tgt}.align",
                [
                    " ".join(f"{i}-{j}" for i, j in align(item.tokens["en"], item.tokens[tgt]))
                    for item in items
                ],
            )
            writer.lines(f"raw/{split}.{tgt}.pos", [pos_line(item.tokens[tgt], tgt) for item in items])
        image_rng = random.Random(f"toyworld:{seed}:{split}:images")
        names = []
        for i, item in enumerate(items):
            name = f"{i:06d}.png"
            writer.bytes(
                f"images/{split}/{name}",
                render_png(item.plan.objects, item.plan.relations, image_rng, image_size),
            )
            names.append(name)
        writer.lines(f"image_splits/{split}.txt", names)

    counts = sense_counts(item.plan for item in splits["train"])
    wsd_rng = random.Random(f"toyworld:{seed}:contrawsd")
    # Test-like sentences, but with the sense-cueing template as often as all others together, so
    # that senses cued by a verb ("the bat flies") are as well represented as those cued by a modifier.
    templates = {**TEMPLATES, "cue": sum(w for k, w in TEMPLATES.items() if k != "cue")}
    sampler = PlanSampler(wsd_rng, ambiguity_rate=0.5, templates=templates)
    wsd: list[dict[str, object]] = []
    for _ in range(contrawsd * MAX_RETRIES):
        if len(wsd) == contrawsd:
            break
        plan = sampler.sample()
        entry = contrawsd_item(plan, counts, origin=f"toyworld seed {seed}")
        if entry is not None and entry["source"] not in seen:
            seen.add(entry["source"])  # type: ignore[arg-type]
            wsd.append(entry)
    writer.bytes(
        "contrawsd/en-de.json", (json.dumps(wsd, ensure_ascii=False, indent=1) + "\n").encode("utf-8")
    )

    manifest = {
        "generator": "nmtvariants toyworld",
        "seed": seed,
        "sizes": sizes,
        "contrawsd": len(wsd),
        "image_size": image_size,
        "languages": list(LANGUAGES),
        "source": "en",
        "targets": list(TARGETS),
        "files": writer.files,
    }
    with atomic_write(root / "manifest.json") as out:
        out.write(json.dumps(manifest, ensure_ascii=False, indent=1) + "\n")
    return manifest
