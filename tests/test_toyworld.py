"""toyworld: determinism, trees and alignments against independent checks, images, ContraWSD, agreement."""

from __future__ import annotations

import difflib
import hashlib
import json
import random
import struct
from collections import Counter
from pathlib import Path

import pytest
from PIL import Image
from sacremoses import MosesTokenizer

from nmtvariants.cli import main as cli_main
from nmtvariants.corpora.toyworld import LANGUAGES, SPLITS, generate
from nmtvariants.corpora.toyworld_image import layout
from nmtvariants.corpora.toyworld_lexicon import AMBIGUOUS, VERBS
from nmtvariants.corpora.toyworld_plan import NP, PlanSampler
from nmtvariants.syntax.conllu import read_conllu
from nmtvariants.text.chain import TrainedChain, load_settings
from nmtvariants.text.moses import Normalizer
from nmtvariants.text.subword_map import HYPHEN, words

SIZES = {"train": 200, "valid": 20, "test": 20}
TARGETS = ("de", "ru", "fr")
CONTENT_UPOS = {"NOUN", "PROPN", "VERB", "ADJ", "NUM", "ADV"}
UD_RELATIONS = {
    "nsubj", "obj", "obl", "amod", "det", "case", "nummod", "advmod", "punct", "conj", "cc", "mark", "advcl",
    "compound", "compound:prt", "root", "cop", "aux", "expl", "nmod", "ccomp", "parataxis", "acl:relcl",
}  # fmt: skip


def _generate(outdir: Path, seed: int) -> Path:
    generate(outdir, seed=seed, **SIZES, image_size=48, contrawsd=40)
    return outdir


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _generate(tmp_path_factory.mktemp("toyworld") / "a", seed=7)


def _lines(path: Path) -> list[str]:
    text = path.read_text(encoding="utf-8")
    assert text.endswith("\n")
    return text[:-1].split("\n")


def _tree_files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _moses(lang: str, text: str) -> list[str]:
    return MosesTokenizer(lang).tokenize(text, escape=False, aggressive_dash_splits=False)


# -- determinism and layout -------------------------------------------------------------------------
def test_same_seed_is_byte_identical_and_other_seed_differs(corpus: Path, tmp_path: Path) -> None:
    again = _tree_files(_generate(tmp_path / "b", seed=7))
    first = _tree_files(corpus)
    assert first.keys() == again.keys()
    assert all(first[name] == again[name] for name in first)
    other = _tree_files(_generate(tmp_path / "c", seed=8))
    assert other["raw/train.en"] != first["raw/train.en"]
    assert other["images/train/000000.png"] != first["images/train/000000.png"]


def test_manifest_lists_every_file_with_its_sha256(corpus: Path) -> None:
    manifest = json.loads((corpus / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["seed"] == 7 and manifest["sizes"] == SIZES and manifest["languages"] == list(LANGUAGES)
    on_disk = {name for name in _tree_files(corpus) if name != "manifest.json"}
    assert {f["path"] for f in manifest["files"]} == on_disk
    for entry in manifest["files"]:
        assert hashlib.sha256((corpus / entry["path"]).read_bytes()).hexdigest() == entry["sha256"]
    assert not [p for p in corpus.rglob("*.tmp")]


def test_parallel_files_line_up(corpus: Path) -> None:
    train_en = set(_lines(corpus / "raw/train.en"))
    for split in SPLITS:
        files = [f"raw/{split}.{lang}" for lang in LANGUAGES]
        files += [f"raw/{split}.en-{tgt}.align" for tgt in TARGETS] + [f"image_splits/{split}.txt"]
        counts = {name: len(_lines(corpus / name)) for name in files}
        assert set(counts.values()) == {SIZES[split]}, counts
        assert len(read_conllu(corpus / f"raw/{split}.en.conllu")) == SIZES[split]
        for lang in LANGUAGES:
            for line in _lines(corpus / f"raw/{split}.{lang}"):
                assert line and line == line.strip() and "  " not in line
                assert line[0].isupper() or line[0].isdigit() or line[0] in '«„"', line
                assert line[-1] in '.!?»“"', line
        if split != "train":
            assert not train_en & set(_lines(corpus / f"raw/{split}.en")), (
                "test sentences repeat training ones"
            )
    ru = (corpus / "raw/train.ru").read_text(encoding="utf-8")
    assert sum("\u0400" <= ch <= "\u04ff" for ch in ru) > 0.5 * sum(ch.isalpha() for ch in ru)


def test_text_has_the_features_the_preprocessing_needs(corpus: Path) -> None:
    en = "\n".join(line for split in SPLITS for line in _lines(corpus / f"raw/{split}.en"))
    de = "\n".join(line for split in SPLITS for line in _lines(corpus / f"raw/{split}.de"))
    assert "," in en and "?" in en and "!" in en and '"' in en and "(" in en
    assert any(ch.isdigit() for ch in en) and "." in "".join(w for w in en.split() if w[:1].isdigit())
    assert "-" in de and "„" in de  # hyphenated compounds, German quotes
    assert any(w[0].isdigit() and "," in w for w in de.split())  # decimal comma


# -- trees ------------------------------------------------------------------------------------------
def _naive_tree_ok(heads: list[int]) -> bool:
    n = len(heads)
    if sum(h == 0 for h in heads) != 1 or any(not 0 <= h <= n or h == i + 1 for i, h in enumerate(heads)):
        return False
    for start in range(1, n + 1):
        node, steps = start, 0
        while node != 0:
            node, steps = heads[node - 1], steps + 1
            if steps > n:
                return False
    return True


def test_naive_tree_check_rejects_bad_trees() -> None:
    assert _naive_tree_ok([2, 0, 2])
    assert not _naive_tree_ok([0, 0])
    assert not _naive_tree_ok([2, 3, 2, 0])
    assert not _naive_tree_ok([4, 0])


def test_conllu_trees_are_valid_and_over_moses_tokens(corpus: Path) -> None:
    for split in SPLITS:
        sentences = read_conllu(corpus / f"raw/{split}.en.conllu", validate=False)
        raw = _lines(corpus / f"raw/{split}.en")
        for index, (sentence, text) in enumerate(zip(sentences, raw, strict=True)):
            assert sentence.sent_id == f"{split}-{index:06d}"
            assert sentence.text == text
            assert _naive_tree_ok(sentence.heads), sentence.sent_id  # type: ignore[arg-type]
            assert sentence.forms == _moses("en", text)
            assert {w.deprel for w in sentence.words} <= UD_RELATIONS
            assert all(w.upos != "X" for w in sentence.words)
            glued = "".join(w.form + ("" if w.misc == "SpaceAfter=No" else " ") for w in sentence.words)
            assert glued.rstrip() == text


def test_target_text_tokenizes_as_generated(corpus: Path) -> None:
    """Every target line is Moses-tokenizable and the alignment indexes those tokens."""
    for split in SPLITS:
        en = [_moses("en", line) for line in _lines(corpus / f"raw/{split}.en")]
        for tgt in TARGETS:
            tokens = [_moses(tgt, line) for line in _lines(corpus / f"raw/{split}.{tgt}")]
            aligns = _lines(corpus / f"raw/{split}.en-{tgt}.align")
            for src, trg, line in zip(en, tokens, aligns, strict=True):
                links = [tuple(map(int, link.split("-"))) for link in line.split()]
                assert links, "empty alignment"
                assert all(0 <= i < len(src) and 0 <= j < len(trg) for i, j in links)


# -- gold annotations through the configured preprocessing ---------------------------------------
CONFIG = Path(__file__).resolve().parent.parent / "config.yaml"
UPOS = {"ADJ", "ADP", "ADV", "AUX", "CCONJ", "DET", "INTJ", "NOUN", "NUM", "PART", "PRON", "PROPN",
        "PUNCT", "SCONJ", "SYM", "VERB", "X"}  # fmt: skip


def _configured_words(corpus: Path, split: str, lang: str) -> tuple[list[list[str]], int]:
    """Words behind the tokens config.yaml's toyworld chain writes (sacremoses normalise + tokenise,
    -a as configured), and how many lines had a hyphen split."""
    chain = TrainedChain(lang, load_settings(CONFIG, "toyworld"))
    tokenized = [chain.tokenize(line) for line in _lines(corpus / f"raw/{split}.{lang}")]
    hyphen = HYPHEN if chain.settings.aggressive_hyphen else None
    return [words(line.split(), hyphen=hyphen) for line in tokenized], sum(HYPHEN in t for t in tokenized)


def test_gold_annotations_index_the_configured_chain_words(corpus: Path) -> None:
    """Every line: the configured chain's words are the gold words (same count, same order, each one
    normalised alone), every alignment index is in range and every target token has one POS tag."""
    hyphenated = 0
    for split in SPLITS:
        source, split_lines = _configured_words(corpus, split, "en")
        hyphenated += split_lines
        sentences = read_conllu(corpus / f"raw/{split}.en.conllu")
        normalize = Normalizer("en")
        for sentence, got in zip(sentences, source, strict=True):
            assert len(got) == len(sentence.words), (sentence.text, got)
            assert got == [normalize(form) for form in sentence.forms], sentence.text  # type: ignore[union-attr]
        for tgt in TARGETS:
            target, split_lines = _configured_words(corpus, split, tgt)
            hyphenated += split_lines
            normalize = Normalizer(tgt)
            raw = _lines(corpus / f"raw/{split}.{tgt}")
            tags = [line.split() for line in _lines(corpus / f"raw/{split}.{tgt}.pos")]
            links = _alignments(corpus, split, tgt)
            for line, got, pos, sentence_links, src in zip(raw, target, tags, links, source, strict=True):
                assert got == [normalize(form) for form in _moses(tgt, line)], line
                assert len(pos) == len(got), (line, pos)
                assert all(0 <= i < len(src) and 0 <= j < len(got) for i, j in sentence_links), line
        assert hyphenated > 0, "no hyphen split in the sample: the -a mapping is untested"


def test_target_pos_tags_agree_with_english_and_a_dictionary(corpus: Path) -> None:
    sentences = read_conllu(corpus / "raw/train.en.conllu")
    for tgt in TARGETS:
        seen: Counter[str] = Counter()
        targets = [_moses(tgt, line) for line in _lines(corpus / f"raw/train.{tgt}")]
        tags = [line.split() for line in _lines(corpus / f"raw/train.{tgt}.pos")]
        for sentence, links, tokens, pos in zip(
            sentences, _alignments(corpus, "train", tgt), targets, tags, strict=True
        ):
            assert len(pos) == len(tokens) and set(pos) <= UPOS
            for token, tag in zip(tokens, pos, strict=True):
                assert (tag == "PUNCT") == all(not ch.isalnum() for ch in token), (token, tag)
            for i, j in links:
                english = sentence.words[i]
                if english.upos in ("NUM", "PROPN") or english.form == "that":
                    assert pos[j] == {"that": "PRON"}.get(english.form, english.upos), (tokens[j], pos[j])
                    seen[english.upos] += 1
                nouns = NOUN_TRANSLATIONS.get(tgt, {}).get(english.lemma, set())
                if english.upos == "NOUN" and tokens[j].split("-")[-1] in nouns:
                    assert pos[j] == "NOUN", (tokens[j], pos[j])
                    seen["NOUN"] += 1
        assert seen["PRON"] and seen["NUM"] and seen["PROPN"], (tgt, seen)
        assert tgt == "ru" or seen["NOUN"] > 20


# -- alignments -------------------------------------------------------------------------------------
def _alignments(corpus: Path, split: str, tgt: str) -> list[set[tuple[int, int]]]:
    return [
        {tuple(map(int, link.split("-"))) for link in line.split()}  # type: ignore[misc]
        for line in _lines(corpus / f"raw/{split}.en-{tgt}.align")
    ]


def test_every_source_content_word_is_aligned(corpus: Path) -> None:
    sentences = read_conllu(corpus / "raw/train.en.conllu")
    for tgt in TARGETS:
        for sentence, links in zip(sentences, _alignments(corpus, "train", tgt), strict=True):
            aligned = {i for i, _ in links}
            for index, word in enumerate(sentence.words):
                if word.upos in CONTENT_UPOS:
                    assert index in aligned, (tgt, sentence.text, word.form)


# Hand-written dictionary (independent of the generator's lexicon).
NOUN_TRANSLATIONS = {
    "de": {
        "ball": {"Ball", "Bälle"},
        "box": {"Kiste", "Kisten"},
        "cube": {"Würfel"},
        "star": {"Stern", "Sterne"},
    },
    "fr": {"ball": {"balle", "balles"}, "box": {"boîte", "boîtes"}, "cube": {"cube", "cubes"}},
}


def test_nouns_align_to_their_translations(corpus: Path) -> None:
    sentences = read_conllu(corpus / "raw/train.en.conllu")
    for tgt, dictionary in NOUN_TRANSLATIONS.items():
        checked = 0
        targets = [_moses(tgt, line) for line in _lines(corpus / f"raw/train.{tgt}")]
        for sentence, links, tokens in zip(
            sentences, _alignments(corpus, "train", tgt), targets, strict=True
        ):
            for index, word in enumerate(sentence.words):
                if word.lemma in dictionary:
                    aligned = {tokens[j].split("-")[-1] for i, j in links if i == index}
                    assert aligned & dictionary[word.lemma], (sentence.text, word.form, aligned)
                    checked += 1
        assert checked > 50


# German articles by hand: (nominative, accusative, dative) of the definite article.
GERMAN_ARTICLES = {"ball": ("der", "den", "dem"), "cube": ("der", "den", "dem"), "box": ("die", "die", "der"),
                   "lamp": ("die", "die", "der"), "egg": ("das", "das", "dem")}  # fmt: skip


def test_german_article_agrees_with_gender_and_case(corpus: Path) -> None:
    sentences = read_conllu(corpus / "raw/train.en.conllu")
    targets = [_moses("de", line) for line in _lines(corpus / "raw/train.de")]
    seen: Counter[tuple[str, str]] = Counter()
    all_articles: set[str] = set()
    for sentence, links, tokens in zip(sentences, _alignments(corpus, "train", "de"), targets, strict=True):
        words = sentence.words
        for index, word in enumerate(words):
            if word.upos != "DET" or word.form.lower() != "the" or word.deprel != "det":
                continue
            articles = {tokens[j].lower() for i, j in links if i == index}
            all_articles |= articles
            noun = words[word.head - 1]  # type: ignore[operator]
            if noun.lemma not in GERMAN_ARTICLES:
                continue
            nom, acc, dat = GERMAN_ARTICLES[noun.lemma]
            governor = words[noun.head - 1] if noun.head else None
            cases = {w.form.lower() for w in words if w.head == noun.id and w.deprel == "case"}
            if noun.deprel == "nsubj":
                expected = {nom}
            elif noun.deprel == "obj" and governor is not None and governor.lemma not in ("follow",):
                expected = {acc}
            elif noun.deprel in ("obl", "nmod") and cases & {"near", "above", "below", "of"}:
                expected = {dat}
            elif noun.deprel == "obl" and cases == {"towards"}:
                expected = {"zum" if dat == "dem" else "zur"}
            else:
                continue
            assert articles == expected, (sentence.text, noun.form, noun.deprel, articles)
            seen[noun.lemma, noun.deprel] += 1
            # Weak adjective ending after the definite article: -e in nom sg and acc f/n, else -en.
            ending = "e" if expected == {nom} or (expected == {acc} and acc != "den") else "en"
            for adj in (w for w in words if w.head == noun.id and w.deprel == "amod"):
                german = [tokens[j] for i, j in links if i == adj.id - 1]
                if any("-" in t for t in german):  # a material: German compound noun ("Holz-Ball")
                    continue
                assert len(german) == 1 and german[0].endswith(ending), (sentence.text, adj.form, german)
                assert ending == "en" or not german[0].endswith("en")
                seen["adjective", ending] += 1
    assert {"der", "die", "das", "den", "dem"} <= all_articles
    assert seen["adjective", "e"] and seen["adjective", "en"]
    assert seen["ball", "nsubj"] and seen["ball", "obj"] + seen["ball", "obl"] + seen["ball", "nmod"]


def test_russian_nouns_take_case_endings(corpus: Path) -> None:
    words = Counter(
        w.strip(".,!?:«»()") for w in (corpus / "raw/train.ru").read_text(encoding="utf-8").split()
    )
    box_forms = {"коробка", "коробку", "коробки", "коробке", "коробкой"} & set(words)
    assert len(box_forms) >= 4


# -- images -----------------------------------------------------------------------------------------
def _png_chunks(data: bytes) -> list[bytes]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    chunks, pos = [], 8
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        chunks.append(data[pos + 4 : pos + 8])
        pos += 12 + length
    return chunks


def test_one_image_per_sentence(corpus: Path) -> None:
    for split in SPLITS:
        names = _lines(corpus / f"image_splits/{split}.txt")
        assert names == [f"{i:06d}.png" for i in range(SIZES[split])]
        assert sorted(p.name for p in (corpus / "images" / split).iterdir()) == names
        for name in names[:20]:
            data = (corpus / "images" / split / name).read_bytes()
            assert set(_png_chunks(data)) <= {b"IHDR", b"IDAT", b"IEND"}  # no time or text metadata
            with Image.open(corpus / "images" / split / name) as image:
                assert image.size == (48, 48) and image.mode == "RGB"
                assert len(image.getcolors(48 * 48)) > 1  # something drawn on the background


def test_layout_follows_relations() -> None:
    objects = [
        NP("a", 0, "ball"),
        NP("b", 1, "box"),
        NP("c", 2, "cube"),
        NP("d", 3, "egg"),
        NP("e", 4, "star"),
    ]
    relations = [(0, "left", 1), (2, "above", 1), (3, "right", 1), (4, "below", 1)]
    for seed in range(20):
        (ax, ay, _), (bx, by, _), (cx, cy, _), (dx, dy, _), (ex, ey, _) = layout(
            objects, relations, random.Random(seed)
        )
        assert ax < bx and cy < by and dx > bx and ey > by
        assert all(0 <= v <= 1 for v in (ax, ay, bx, by, cx, cy, dx, dy, ex, ey))


# -- ContraWSD --------------------------------------------------------------------------------------
WSD_KEYS = {"source", "reference", "errors", "ambig word", "sense", "original translation",
            "frequency of sense/ambig word in wmt16", "origin"}  # fmt: skip


def test_contrawsd_layout_and_contrasts(corpus: Path) -> None:
    items = json.loads((corpus / "contrawsd/en-de.json").read_text(encoding="utf-8"))
    assert len(items) == 40
    train_en = set(_lines(corpus / "raw/train.en"))
    en_tokens = Counter(t.lower() for line in _lines(corpus / "raw/train.en") for t in _moses("en", line))
    de_tokens = Counter(
        t.split("-")[-1] for line in _lines(corpus / "raw/train.de") for t in _moses("de", line)
    )
    senses: dict[str, set[str]] = {}
    for item in items:
        senses.setdefault(item["ambig word"], set()).add(item["sense"])
    for item in items:
        assert set(item) == WSD_KEYS
        assert item["source"] not in train_en
        word = item["ambig word"]
        assert word in {t.lower() for t in _moses("en", item["source"])}
        sense_forms = set(item["sense"].split("|"))
        reference = _moses("de", item["reference"])
        assert item["original translation"] in reference
        assert item["original translation"].split("-")[-1] in sense_forms
        assert item["errors"]
        for error in item["errors"]:
            contrastive = _moses("de", error["contrastive"])
            assert contrastive != reference
            changed_ref, changed_con = [], []
            for op, i1, i2, j1, j2 in difflib.SequenceMatcher(a=reference, b=contrastive).get_opcodes():
                if op != "equal":
                    changed_ref += reference[i1:i2]
                    changed_con += contrastive[j1:j2]
            # Only the ambiguous word's translation, its article/adjectives and the relative pronoun
            # that agrees with it change.
            assert item["original translation"] in changed_ref and len(changed_ref) <= 5
            assert not {t.split("-")[-1] for t in changed_con} & sense_forms
            words = [t for t in changed_con if t.lower() not in ("der", "die", "das")]
            assert all(t[0].islower() for t in words[:-1]) and words[-1][0].isupper(), changed_con
        absolute, total = map(int, item["frequency of sense/ambig word in wmt16"].split("/"))
        assert total == en_tokens[word] + en_tokens[word + "s"]  # every mention is singular or plural
        assert absolute == sum(de_tokens[form] for form in sense_forms)
        assert 0 <= absolute <= total


def _clauses(clause):  # type: ignore[no-untyped-def]
    """A clause and the relative clauses inside its noun phrases."""
    if clause is None:
        return
    yield clause
    for np in [*clause.subj, clause.obj, clause.pp and clause.pp.np]:
        if isinstance(np, NP):
            yield from _clauses(np.rel)
            if np.pp is not None:
                yield from _clauses(np.pp.np.rel)


def _subject_ref(subject: object) -> str:
    """The mention a subject is, or stands for (a relative pronoun: its noun)."""
    return getattr(getattr(subject, "antecedent", subject), "ref", "")


def test_every_ambiguous_mention_is_cued_in_its_sentence() -> None:
    """A cue adjective of its sense, or a verb whose subject it is (own clause or relative clause)
    that no other sense of the word can take: the sense is decidable from the source alone."""
    sampler = PlanSampler(random.Random("cues"), ambiguity_rate=0.5)
    kinds: Counter[str] = Counter()
    for _ in range(2000):
        plan = sampler.sample()
        clauses = [*_clauses(plan.main), *_clauses(plan.sub)]
        for np in (np for np in plan.objects if np.sense):
            word = AMBIGUOUS[np.noun]
            if any(key in word.cue_adjectives[np.sense] for _, key in np.modifiers):
                kinds["adjective"] += 1
                continue
            refs = {np.ref}
            verbs = {c.verb for c in clauses if c.verb and refs & {_subject_ref(s) for s in c.subj}}
            others = {word.senses[s].cls for s in word.senses if s != np.sense}
            assert any(not set(VERBS[v].subjects) & others for v in verbs), (np, verbs)
            kinds["verb"] += 1
    assert kinds["adjective"] and kinds["verb"] > 100, kinds


# -- CLI --------------------------------------------------------------------------------------------
def test_cli_writes_the_corpus_and_rejects_bad_sizes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "cli"
    args = ["toyworld", "--outdir", str(out), "--seed", "3", "--train", "30", "--valid", "5", "--test", "5"]
    assert cli_main([*args, "--image-size", "32", "--contrawsd", "5"]) == 0
    assert len(_lines(out / "raw/valid.fr")) == 5
    with Image.open(out / "images/test/000004.png") as image:
        assert image.size == (32, 32)
    assert cli_main(["toyworld", "--outdir", str(tmp_path / "bad"), "--train", "0"]) == 2
    assert "--train" in capsys.readouterr().err


@pytest.mark.slow
def test_default_size_corpus_vocabulary(tmp_path: Path) -> None:
    """The default 20k corpus: moderate vocabularies and Moses-identical tokens on a sample."""
    generate(tmp_path, contrawsd=300)
    for lang in LANGUAGES:
        lines = _lines(tmp_path / f"raw/train.{lang}")
        assert len(lines) == 20000
        types = (
            {t for line in lines for t in _moses(lang, line)}
            if lang == "en"
            else {w.strip('.,!?:«»„“"()') for w in " ".join(lines).split()}  # words, not "коробкой,"
        )
        assert 200 <= len(types) <= 1500, (lang, len(types))
    sentences = read_conllu(tmp_path / "raw/train.en.conllu")
    for sentence in sentences[::50]:
        assert sentence.forms == _moses("en", sentence.text)  # type: ignore[arg-type]
    assert len(json.loads((tmp_path / "contrawsd/en-de.json").read_text(encoding="utf-8"))) == 300


def test_generated_tokens_equal_sacremoses_in_all_languages() -> None:
    """The tokens trees and alignments index are exactly Moses's tokens of the written text."""
    from nmtvariants.corpora.toyworld import generate_split

    for item in generate_split(random.Random("tokens"), 300):
        for lang in LANGUAGES:
            assert [t.form for t in item.tokens[lang]] == _moses(lang, item.text[lang]), item.text[lang]
