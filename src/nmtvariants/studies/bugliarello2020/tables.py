"""Bugliarello & Okazaki (2020), PASCAL: gold parses on the workflow's tokens, and the paper's tables.

**Gold trees on preprocessed tokens.** PASCAL, LISA, S&H and the multi-task corpus lift a word-level
parse onto the BPE tokens of the same line (:mod:`nmtvariants.syntax.parents`,
:mod:`nmtvariants.syntax.dep_labels`), which needs a parse whose words are the Moses tokens the BPE was
applied to: the truecased, hyphen-split text ``data/<corpus>/<pair>/tc/<split>.<src>`` (for the
training split that file holds the cleaned lines only). On real corpora the Stanza rule parses exactly
that text. Toyworld ships gold trees over the *raw* words instead (``raw/<split>.en.conllu``: ``The``
where truecasing writes ``the``; ``dark-blue`` where ``-a`` writes ``dark @-@ blue``), one per raw line.
:func:`project_tree` moves a gold tree onto the preprocessed tokens so that both paths give the same
kind of file:

* the training split follows the cleaning through ``clean/train.kept`` (the kept raw line numbers);
* each word's FORM becomes its token(s) of the preprocessed line; the two must agree apart from case
  (truecasing) and Moses escapes, else an InputError names the line and word;
* a word split by ``-a`` becomes one word per piece, as a parser run on the Moses tokens sees it (UD
  treebanks split hyphenated words the same way): the *last* piece keeps the word's head and relation
  (a right-headed compound, ``dark-blue`` -> ``blue``), the earlier pieces attach to it, ``@-@``
  markers as ``punct`` and the other pieces as ``compound``. Dependents of the word attach to its last
  piece. Which piece heads the word is our convention; it moves a PASCAL parent by at most the
  piece count (one token here) and leaves every other word's parent unchanged.

**Tables.** :func:`main_table` is Table 1 (BLEU per task and system, significance marks against the
task's Transformer, RIBES where the target is Japanese), :func:`length_rows` the long-format data of
Figure 2 (BLEU by source-length bucket, one bar group per system) and :func:`ablation_table` Table 3
(PASCAL layer and variance ablations). They read the workflow's JSON files (``evaluate``,
``significance``, ``bleu-by-length``) through a *manifest*: one entry per (task, system) with the file
paths and the variant's switches, which the study's rules build from the config.

With several training seeds (``seeds: [...]``) a row is the mean ± sample sd of its replicas' BLEU,
with ``n``, and the CSV keeps each seed's score; ‡ and delta come from the bootstrap over sentences and
replicas (:func:`nmtvariants.evaluation.significance.replica_bootstrap`), which with one seed each is
sacreBLEU's paired bootstrap; ‡ is given only where both sides have two or more seeds (:func:`mark`):
one run each tests the sampling of sentences, not of training.

Where our evaluation differs from the authors' (seed brief §2.8; :data:`DEVIATIONS` has the text the
tables carry): their bootstrap is one-sided with a
shifted null (seed 1234), ours two-sided over sentences and seeds (1,000 samples, the seed in the
JSON); both mark p < 0.01 (‡), the authors on one training run per system, we on two or more.
Their Japanese BLEU and RIBES re-tokenise with KyTea, ours with MeCab
(sacreBLEU's ``ja-mecab``; RIBES through the same tokenizer), so EN-JA numbers are not comparable with
the paper's to the decimal; KyTea is not packaged for our environment, so their variant is not offered.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from nmtvariants.errors import InputError
from nmtvariants.fileio import PathLike, read_lines
from nmtvariants.reporting.deviations import Deviation
from nmtvariants.reporting.replicas import aggregate_replicas, sd_column
from nmtvariants.reporting.results import UNRECORDED_SEED
from nmtvariants.syntax.conllu import Sentence, Word, parse_conllu, validate_tree, write_conllu
from nmtvariants.syntax.parents import unescape_moses
from nmtvariants.text.clean import read_kept
from nmtvariants.text.subword_map import HYPHEN

SIGNIFICANT = 0.01  # the paper's ‡: p < 0.01 against the Transformer
MARK = "‡"
MARK_REPLICAS = 2  # ‡ needs a test over replicas: at least two training seeds on each side
# Table 1's systems, in the paper's column order, recognised by the variant's switch, or for the
# multi-task baseline (a Transformer on a derived corpus) by its `inputs: {derived: multitask}`.
MULTITASK = "multitask"
# How long the multi-task run trained against the others (the manifest's ``update_ratio``).
MULTITASK_EQUAL_UPDATES, MULTITASK_MORE_UPDATES = "multitask_equal_updates", "multitask_more_updates"
ROLES = (
    ("transformer", "Transformer"),
    ("sennrich_haddow", "+S&H"),
    (MULTITASK, "+multi-task"),
    ("lisa", "+LISA"),
    ("pascal", "+PASCAL"),
)


TABLE_KEYS = ("main", "ablation", "parser")  # Table 1, Table 3, the parser table
# Every known difference from the paper behind the study's tables (reporting/deviations.py). ``when``:
# a condition table_conditions finds in a table's manifest.
DEVIATIONS: tuple[Deviation, ...] = (
    Deviation(
        "stanza_parser",
        TABLE_KEYS,
        "Source parses: Stanza's dependency parser trained offline by `nmtvariants stanza-train` "
        "(no pretrained word vectors or character LM), or a corpus's own gold trees (toyworld); the "
        "authors parsed with CoreNLP.",
    ),
    Deviation(
        "ud_labels",
        ("main",),
        "+S&H: each sub-word's feature is its word's universal UD relation (subtypes dropped: "
        "`nmod:poss` -> `nmod`); the authors used CoreNLP's labels.",
        when="sennrich_haddow",
    ),
    Deviation(
        "dependency_linearisation",
        ("main",),
        "+multi-task: the parse targets linearise the source's *dependency* tree (one bracket per word, "
        "opened by its relation; nmtvariants.syntax.linearize); the authors linearised a CoreNLP "
        "constituency parse.",
        when="multitask",
    ),
    Deviation(
        "multitask_equal_updates",
        ("main",),
        "+multi-task trains for as many updates as every other system, on a corpus that pairs each "
        "translation pair with a parse of its source, so only part of each update is translation (34% "
        "of the target tokens on toyworld): at equal updates it has seen about a third of the "
        "baseline's translation data. The paper does not say how long it trained it. On toyworld, "
        "trained until it has seen the baseline's translation tokens (3x the updates), it matches the "
        "baseline (benchmarks/results/toy_convergence_multitask_full_world.md, 2026-11-27).",
        when=MULTITASK_EQUAL_UPDATES,
    ),
    Deviation(
        "multitask_translation_tokens",
        ("main",),
        "+multi-task trains for more updates than the other systems (`variant_train`; the demo: 3x), so "
        "that it sees about as many translation tokens: its corpus pairs each translation pair with a "
        "parse of its source, and only about a third of its target tokens are translation (34% on "
        "toyworld). The paper does not say how long it trained it; at equal updates the toy multi-task "
        "run does not reach its plateau (benchmarks/results/toy_world_length.md, 2026-11-27).",
        when=MULTITASK_MORE_UPDATES,
    ),
    Deviation(
        "two_sided_bootstrap",
        ("main", "ablation"),
        "‡ comes from a two-sided paired bootstrap over sentences and training seeds (1,000 samples; "
        "sacreBLEU's paired bootstrap when each system has one seed); the authors used a one-sided "
        "bootstrap with a shifted null (seed 1234) on one training run per system.",
    ),
    Deviation(
        "japanese_tokenisation",
        ("main",),
        "Japanese: Moses-tokenised before BPE (the authors: CaboCha), and BLEU and RIBES re-tokenise with "
        "MeCab (sacreBLEU's ja-mecab; the authors: KyTea), so EN-JA numbers are not comparable with the "
        "paper's to the decimal.",
        when="japanese",
    ),
)


def table_conditions(entries: Iterable[Mapping[str, Any]]) -> set[str]:
    """The conditions of the conditional deviations that a table's manifest meets: the systems it has
    (by :func:`role`) and a Japanese target."""
    conditions = {role(entry.get("switches"), entry.get("derived")) for entry in entries}
    for entry in entries:
        if role(entry.get("switches"), entry.get("derived")) == MULTITASK:
            longer = entry.get("update_ratio", 1) > 1
            conditions.add(MULTITASK_MORE_UPDATES if longer else MULTITASK_EQUAL_UPDATES)
    if any(str(entry.get("pair", "")).endswith("-ja") for entry in entries):
        conditions.add("japanese")
    return conditions


# --- gold trees on the preprocessed tokens ------------------------------------------------------


def hyphen_groups(tokens: Sequence[str]) -> list[list[int]]:
    """Token indices of each word: ``@-@`` glues the tokens either side of it into one word."""
    groups: list[list[int]] = []
    glue = False
    for index, token in enumerate(tokens):
        marker = token == HYPHEN and index > 0
        if groups and (glue or marker):
            groups[-1].append(index)
        else:
            groups.append([index])
        glue = marker
    return groups


def _same_word(form: str, pieces: Sequence[str]) -> bool:
    joined = "".join("-" if piece == HYPHEN else unescape_moses(piece) for piece in pieces)
    return joined.casefold() == unescape_moses(form).casefold()


def project_tree(sentence: Sentence, line: str, where: str) -> Sentence:
    """The gold ``sentence`` over the tokens of the preprocessed ``line`` (module docstring)."""
    if sentence.multiword or sentence.empty_nodes:
        raise InputError(f"{where}: multiword tokens and empty nodes are not supported in gold trees")
    tokens = line.split()
    groups = hyphen_groups(tokens)
    if len(groups) != len(sentence.words):
        raise InputError(
            f"{where}: the preprocessed line has {len(groups)} words but the gold tree has "
            f"{len(sentence.words)}; give the tree of the same raw line"
        )
    head_piece = {}  # gold word id -> new id of its last piece
    for word, group in zip(sentence.words, groups, strict=True):
        if not _same_word(word.form, [tokens[i] for i in group]):
            raise InputError(
                f"{where}: word {word.id} is {word.form!r} in the gold tree but "
                f"{' '.join(tokens[i] for i in group)!r} in the preprocessed line; give the tree of "
                "the same raw line"
            )
        head_piece[word.id] = group[-1] + 1
    words: list[Word] = []
    for word, group in zip(sentence.words, groups, strict=True):
        last = group[-1] + 1
        for index in group:
            new_id = index + 1
            if new_id == last:
                head = 0 if word.head == 0 else head_piece[word.head]  # type: ignore[index]
                deprel, upos = word.deprel, word.upos
            else:
                head = last
                marker = tokens[index] == HYPHEN
                deprel, upos = ("punct", "PUNCT") if marker else ("compound", word.upos)
            words.append(Word(new_id, tokens[index], tokens[index], upos, "_", "_", head, deprel))
    comments = [c for c in sentence.comments if not c.startswith("# text =")] + [f"# text = {line}"]
    projected = Sentence(words=words, comments=comments)
    validate_tree(projected, where)
    return projected


def gold_parse(conllu: PathLike, preprocessed: PathLike, kept: PathLike | None = None) -> list[Sentence]:
    """Gold trees of ``conllu`` (one per raw line; the ``kept`` ones if given) on ``preprocessed``."""
    lines = list(read_lines(preprocessed))
    raw_lines = list(read_lines(conllu))
    if kept is not None:
        numbers = read_kept(kept)
        sentences = list(parse_conllu(raw_lines, source=str(conllu)))
        if numbers and numbers[-1] > len(sentences):
            raise InputError(
                f"{kept}: line {numbers[-1]} was kept but {conllu} has {len(sentences)} trees; give the "
                "gold parse of the corpus that was cleaned"
            )
        sentences = [sentences[number - 1] for number in numbers]
    else:
        sentences = list(parse_conllu(raw_lines, source=str(conllu)))
    if len(sentences) != len(lines):
        raise InputError(
            f"{conllu} gives {len(sentences)} trees for the {len(lines)} lines of {preprocessed}; give "
            "the gold parse of the same split (and --kept for a cleaned training split)"
        )
    return [
        project_tree(sentence, line, f"{preprocessed}:{number} vs {conllu}:{sentence.line}")
        for number, (sentence, line) in enumerate(zip(sentences, lines, strict=True), start=1)
    ]


def write_gold_parse(
    conllu: PathLike, preprocessed: PathLike, output: PathLike, kept: PathLike | None = None
) -> int:
    return write_conllu(output, gold_parse(conllu, preprocessed, kept))


# --- manifests: which files make each row -------------------------------------------------------


def role(switches: Mapping[str, Any] | None, derived: str | None = None) -> str:
    """Which of Table 1's systems a variant is, from its switches (``{}``: the Transformer) and the
    derived corpus it trains on (``multitask``: the multi-task baseline)."""
    names = set(switches or {}) | ({derived} if derived else set())
    found = [name for name, _ in ROLES[1:] if name in names]
    if len(found) > 1:
        raise InputError(f"variant switches {sorted(names)}: one syntax mechanism per variant in Table 1")
    return found[0] if found else "transformer"


def _read_json(path: PathLike) -> dict[str, Any]:
    try:
        document = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as error:
        raise InputError(f"{path}: cannot read ({error}); re-run the stage that wrote it") from None
    if not isinstance(document, dict):
        raise InputError(f"{path}: expected a JSON object; re-run the stage that wrote it")
    return document


def _score(document: Mapping[str, Any], metric: str, path: PathLike) -> float | None:
    result = (document.get("scores") or {}).get(metric)
    if result is None:
        return None
    if not isinstance(result, dict) or not isinstance(result.get("score"), int | float):
        raise InputError(f"{path}: scores.{metric} has no score; re-run evaluate")
    return float(result["score"])


def _bleu(entry: Mapping[str, Any], scores: Mapping[str, Any] | None = None) -> float:
    scores = _read_json(entry["scores"]) if scores is None else scores
    bleu = _score(scores, "bleu", entry["scores"])
    if bleu is None:
        raise InputError(f"{entry['scores']}: no BLEU; add bleu to the experiment's metrics")
    return bleu


def _significance(path: PathLike | None) -> tuple[float | None, float | None, int]:
    """(delta, p, replicas) of BLEU from a ``significance`` JSON, ``replicas`` the fewer training
    seeds of the two sides (1 where the JSON lists no per-seed scores); (None, None, 0) for the
    baseline itself."""
    if path is None:
        return None, None, 0
    document = _read_json(path)
    bleu = (document.get("metrics") or {}).get("bleu")
    if not isinstance(bleu, dict) or "p_value" not in bleu:
        raise InputError(f"{path}: no BLEU p-value; run `nmtvariants significance --metrics bleu`")
    sides = [len((bleu.get(side) or {}).get("scores") or [None]) for side in ("baseline", "system")]
    return float(bleu["delta"]), float(bleu["p_value"]), min(sides)


def mark(p_value: float | None, replicas: int) -> str:
    """‡ for p < 0.01 from a test over at least two training seeds a side: with one seed the test
    samples the test sentences only, and a difference between two single runs can be training noise
    (the toy baseline's BLEU moves by more than most toy differences between seeds)."""
    return MARK if p_value is not None and p_value < SIGNIFICANT and replicas >= MARK_REPLICAS else ""


def task_name(entry: Mapping[str, Any]) -> str:
    return f"{entry['experiment']} {entry['pair']} {entry['testset']}"


def replica_scores(entry: Mapping[str, Any]) -> list[tuple[object, str]]:
    """(seed, score file) of every replica of an entry: ``scores`` is one file or one per seed, with
    ``seeds`` giving their seeds (``?`` where the manifest does not say)."""
    paths = entry["scores"] if isinstance(entry["scores"], list) else [entry["scores"]]
    seeds = entry.get("seeds") or [UNRECORDED_SEED] * len(paths)
    if len(seeds) != len(paths) or not paths:
        raise InputError(
            f"{entry.get('variant')}: {len(paths)} score files for {len(seeds)} seeds; the manifest gives "
            "one score file per seed"
        )
    return list(zip(seeds, paths, strict=True))


def significance_method(entries: Iterable[Mapping[str, Any]]) -> str:
    """How the table's p-values were computed: the ``method`` its significance JSONs record (the test
    over sentences and replicas), else sacreBLEU's paired bootstrap of one output each."""
    for entry in entries:
        if entry.get("significance"):
            document = _read_json(entry["significance"])
            return str(
                document.get("method")
                or "sacreBLEU's two-sided paired bootstrap over sentences "
                f"({document.get('n_samples')} samples, seed {document.get('seed')}), one output per system"
            )
    return "no test (no variant besides the Transformer)"


def _replicated(
    entries: Sequence[Mapping[str, Any]], keys: list[str], columns: Mapping[str, Any], japanese: bool = False
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """One row per entry (in the given order) with ``keys`` and ``n`` first, BLEU (and RIBES for a
    Japanese target) as mean and sample sd over the entry's seeds, then the per-entry ``columns``
    (column -> one value per entry, in both frames) and each seed's score at the end of the CSV.
    Returns the CSV frame and the markdown frame (``mean ± sd``, RIBES ``n/a`` off Japanese)."""
    long = []
    for index, entry in enumerate(entries):
        for seed, path in replica_scores(entry):
            scores = _read_json(path)
            row = {"row": index, "seed": seed, "BLEU": _bleu({"scores": path}, scores)}
            if japanese:
                ribes = _score(scores, "ribes", path) if is_japanese(entry) else None
                if is_japanese(entry) and ribes is None:
                    raise InputError(f"{path}: no RIBES for a Japanese target; add ribes to the metrics")
                row["RIBES"] = math.nan if ribes is None else ribes
            long.append(row)
    metrics = ["BLEU", "RIBES"] if japanese else ["BLEU"]
    csv, markdown, _ = aggregate_replicas(pd.DataFrame(long), ["row"], metrics)
    for frame in (csv, markdown):
        del frame["row"]
        for position, key in enumerate(keys):
            frame.insert(position, key, [entry[key] for entry in entries])
    after = sd_column("BLEU")
    for column, values in columns.items():  # object columns: a blank cell stays None, not NaN
        csv.insert(csv.columns.get_loc(after) + 1, column, pd.Series(values, dtype=object))
        where = markdown.columns.get_loc(after if after in markdown else "BLEU") + 1
        markdown.insert(where, column, pd.Series(values, dtype=object))
        after = column
    if japanese:
        markdown["RIBES"] = [cell if cell else "n/a" for cell in markdown["RIBES"]]
    return csv, markdown


def is_japanese(entry: Mapping[str, Any]) -> bool:
    return str(entry["pair"]).split("-")[-1] == "ja"


def main_table(entries: Iterable[Mapping[str, Any]]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Table 1: one row per (task, system); tasks in manifest order, systems in the paper's order.

    Each entry: ``experiment``, ``pair``, ``testset``, ``variant``, ``switches``, ``scores`` (the
    evaluate JSON, or one per seed with their ``seeds``) and ``significance`` (the JSON against the
    task's Transformer, over all replicas of both; null for the Transformer itself). BLEU is the mean
    over seeds with its sample sd and ``n``; delta is the difference of the means and ‡ marks p < 0.01
    of the test. RIBES is given where the target is Japanese (from the scores JSONs, which then must
    hold it) and ``n/a`` elsewhere, as in the paper. Returns the CSV frame (each seed's scores at the
    end) and the markdown frame (``mean ± sd``)."""
    rows = [
        {
            **entry,
            "task": task_name(entry),
            "system": dict(ROLES)[role(entry.get("switches"), entry.get("derived"))],
        }
        for entry in entries
    ]
    tasks = list(dict.fromkeys(row["task"] for row in rows))
    systems = [label for _, label in ROLES]
    rows.sort(key=lambda row: (tasks.index(row["task"]), systems.index(row["system"])))  # stable
    tests = [_significance(row.get("significance")) for row in rows]
    columns = {
        "mark": [mark(p, replicas) for _, p, replicas in tests],
        "delta": [None if delta is None else round(delta, 2) for delta, _, _ in tests],
        "p": [None if p is None else round(p, 4) for _, p, _ in tests],
    }
    csv, markdown = _replicated(rows, ["task", "system", "variant"], columns, japanese=True)
    return csv, markdown


def length_rows(entries: Iterable[Mapping[str, Any]]) -> pd.DataFrame:
    """Figure 2's long-format data: ``bucket``, ``variant``, ``bleu``, ``n_sentences`` (entries:
    ``variant`` and ``length``, a ``bleu-by-length`` JSON). Rows go bucket by bucket so that the bars
    keep the bucket order; empty buckets have no BLEU and are left out."""
    per_variant = []
    for entry in entries:
        document = _read_json(entry["length"])
        per_variant.append((entry["variant"], document.get("buckets") or []))
    labels: list[str] = []
    for _, buckets in per_variant:
        for bucket in buckets:
            if bucket["bucket"] not in labels:
                labels.append(bucket["bucket"])
    rows = []
    for label in labels:
        for variant, buckets in per_variant:
            for bucket in buckets:
                if bucket["bucket"] == label and bucket.get("bleu") is not None:
                    rows.append(
                        {
                            "bucket": label,
                            "variant": variant,
                            "bleu": round(float(bucket["bleu"]), 2),
                            "n_sentences": int(bucket["n_sentences"]),
                        }
                    )
    return pd.DataFrame(rows, columns=["bucket", "variant", "bleu", "n_sentences"])


def ablation_table(entries: Iterable[Mapping[str, Any]]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Table 3: one row per PASCAL variant (entries as for :func:`main_table`, PASCAL variants only):
    its layer (3a), variance or ``parent-only`` (3b), heads and q, BLEU (mean ± sd over seeds, ``n``),
    and the difference from the task's Transformer with its mark. Unset options show the plug-in's
    defaults (layer 1, all heads, variance 1, q 0). Returns the CSV and the markdown frame."""
    rows = []
    for entry in entries:
        options = dict((entry.get("switches") or {}).get("pascal") or {})
        if role(entry.get("switches"), entry.get("derived")) != "pascal":
            raise InputError(f"{entry['variant']}: Table 3 lists PASCAL variants only")
        rows.append(
            {
                **entry,
                "task": task_name(entry),
                "layer": int(options.get("layer", 1)),
                "heads": "all" if options.get("heads") is None else str(options["heads"]),
                "variance": "parent-only"
                if options.get("parent_only")
                else f"{float(options.get('variance', 1.0)):g}",
                "q": float(options.get("q", 0.0)),
            }
        )
    rows.sort(key=lambda row: (row["task"], row["layer"], row["variance"]))  # stable, as the paper
    tests = [_significance(row.get("significance")) for row in rows]
    columns = {
        "delta": [None if delta is None else round(delta, 2) for delta, _, _ in tests],
        "mark": [mark(p, replicas) for _, p, replicas in tests],
    }
    return _replicated(rows, ["task", "variant", "layer", "heads", "variance", "q"], columns)


def parser_table(paths: Sequence[PathLike]) -> pd.DataFrame:
    """The Stanza parser(s) the study parses with: one row per ``stanza-score`` JSON (treebank test set,
    gold words), with what each was trained on and for how long."""
    rows = []
    for path in paths:
        document = _read_json(path)
        training = document.get("training") or {}
        try:
            rows.append(
                {
                    "lang": document["lang"],
                    "test set": Path(document["gold"]).parent.parent.name + " " + Path(document["gold"]).stem,
                    "train sentences": training.get("train_sentences"),
                    "tagger steps": training.get("tagger_steps"),
                    "parser steps": training.get("parser_steps"),
                    "words": document["words"],
                    "UPOS": round(float(document["upos"]), 2),
                    "UAS": round(float(document["uas"]), 2),
                    "LAS": round(float(document["las"]), 2),
                }
            )
        except KeyError as error:
            raise InputError(f"{path}: no {error.args[0]}; re-run `nmtvariants stanza-score`") from None
    return pd.DataFrame(rows)
