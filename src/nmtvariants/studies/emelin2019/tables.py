"""Emelin, Titov & Sennrich (2019), lexical shortcuts: the paper's tables from the workflow's files.

Each builder takes what the study's rules (``rules/studies/emelin2019.smk``) produced -- score JSONs,
parameter counts, training logs, the long CSVs of ``layer-probes``, ``similarity`` and ``gate-stats``,
the JSON of ``contrawsd`` -- and returns one DataFrame, the rows of one table:

* Table 1 / Table 2 (:func:`bleu_table`): tokenised BLEU and sacreBLEU per test set and their mean,
  one block per pair (Table 1 is EN-DE, Table 2 the other pairs).
* Table 4 (:func:`variants_table`): each shortcut variant's mean BLEU and its difference to the baseline.

An experiment trained with several seeds (``seeds: [...]``) has one replica per seed; Tables 1-4 give
each system's mean ± sample sd over its replicas with ``n`` (:func:`bleu_replicas`, then
:func:`replicated_bleu_table`; each seed's score stays in the CSV), and the
bootstrap table reads the test over sentences and every replica of both systems.
* Table 5 (:func:`params_speed_table`): parameters and training speed relative to the baseline.
* The real-data comparison (:func:`bootstrap_table`): sacreBLEU and chrF per test set, each variant's
  difference to the baseline and its paired-bootstrap p-value (from ``nmtvariants significance``).
* The probe breakdowns (:func:`probe_breakdown`), the figure curves (:func:`layer_curves`), the gate
  statistics (:func:`gate_table`) and ContraWSD accuracy (:func:`contrawsd_table`).

Also the POS of every BPE token (the probes' POS breakdown): :func:`pos_labels` projects the source POS
from a CoNLL-U parse of the tokenised text, :func:`target_pos_labels` the target POS from word-level tags
(toyworld's ``raw/{split}.{de,ru,fr}.pos``).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

import pandas as pd

from nmtvariants.errors import InputError
from nmtvariants.fileio import PathLike, read_lines
from nmtvariants.reporting.deviations import Deviation
from nmtvariants.reporting.replicas import aggregate_replicas, format_mean_sd, sd_column
from nmtvariants.reporting.results import UNRECORDED_SEED, replica_seed
from nmtvariants.syntax.conllu import Sentence
from nmtvariants.syntax.dep_labels import bpe_word_spans, head_word, surface_tokens
from nmtvariants.text.subword_map import HYPHEN, word_ids
from nmtvariants.training.logging_utils import training_speed  # noqa: F401 (re-exported)

MEAN = "mean"
BLEU, TOK_BLEU = "BLEU", "tok. BLEU"
BLEU_KEYS = ["experiment", "pair", "variant", "testset"]  # one row of Tables 1-3 (over seeds)
SHORTCUT_OPTIONS = ("kind", "self_attention", "cross_attention", "source", "wiring")
# The study's table commands (cli.py): bleu writes Tables 1-3, variants Table 4, params
# Table 5, probes the probe breakdowns.
TABLE_KEYS = ("bleu", "variants", "params", "bootstrap", "probes", "gates", "contrawsd")
# Every known difference from the paper behind the study's tables (reporting/deviations.py). ``when``:
# a condition the table command finds in its inputs.
DEVIATIONS: tuple[Deviation, ...] = (
    Deviation(
        "non_lexical_shortcuts",
        ("variants",),
        "Non-lexical shortcuts: the published code's option never reaches its n-2 module, so the paper's "
        "row comes from unpublished settings; this row is the module the paper describes (feature-fusion "
        "with inputs [H_{n-2}; H_{n-1}]; layer 1 [E; E], layer 2 [E; H_1]).",
        when="non_lexical",
    ),
    Deviation(
        "pos_tags",
        ("probes",),
        "POS tags: the source side's from its CoNLL-U parse (toyworld: its generated gold trees), the "
        "target side's from toyworld's generated word tags, each word's tag on all its sub-words; the "
        "paper projected TreeTagger's tags onto the sub-words.",
        when="pos",
    ),
    Deviation(
        "shared_warmup",
        ("bleu", "variants"),
        "Warm-up: every variant here trains with the baseline's warm-up; the paper's are 4000 / 6000 / "
        "8000 updates (baseline / lexical / feature-fusion shortcuts), a few percent of its runs, and "
        "configs that give a variant its own `warmup` keep them (experiments/emelin2019.yaml).",
        when="shared_warmup",
    ),
)


def variant_conditions(switches: Mapping[str, Mapping[str, Any] | None]) -> set[str]:
    """The conditions of the conditional deviations that a table's variants meet: non-lexical
    shortcuts, and shortcut variants that share the baseline's warm-up (none has its own)."""
    options = [options or {} for options in switches.values()]
    sources = {(option.get("shortcuts") or {}).get("source") for option in options}
    shortcuts = [option for option in options if option.get("shortcuts")]
    conditions = {"non_lexical"} if "n_minus_2" in sources else set()
    if shortcuts and not any("warmup" in option for option in shortcuts):
        conditions.add("shared_warmup")
    return conditions


# --- Tables 1 and 2: BLEU ---------------------------------------------------------------------------


def bleu_replicas(
    records: Sequence[Mapping[str, Any]],
    variants: Sequence[str] | None = None,
    mean_testsets: Sequence[str] | None = None,
    seeds: Sequence[object] | None = None,
) -> pd.DataFrame:
    """Rows ``experiment, pair, variant, seed, testset, tok. BLEU, BLEU``: every replica's scores per
    test set, test sets in the order first seen, then the replica's ``mean`` row (the unweighted mean
    over its test sets, as the paper averages the newstest years). ``variants`` orders the rows
    (default: first seen); within a variant the seeds follow in the order first seen.

    ``seeds`` gives each record's training seed (its replica folder ``<variant>-seed<N>`` is then read
    back as ``variant``: :func:`nmtvariants.reporting.results.replica_seed`); without it the seed
    comes from such a folder name. The mean is taken per replica, so that the spread over seeds of a
    table's ``mean`` is that of the replicas' test means.

    ``mean_testsets``: average over exactly these test sets, each of which every replica must have been
    scored on (other test sets keep their rows but stay out of the mean). Tables 3 and 4's "test mean"
    is the average over Table 1's test sets, whichever columns the table shows."""
    if seeds is not None and len(seeds) != len(records):
        raise InputError(
            f"bleu table: {len(seeds)} seeds for {len(records)} score records; give one per file"
        )
    rows = []
    for index, record in enumerate(records):
        experiment, pair, replica = [*record["system"].split("/"), "", ""][:3]
        variant, seed = replica_seed(replica, None if seeds is None else seeds[index])
        scores = record["scores"]
        missing = [metric for metric in ("bleu", "tok-bleu") if metric not in scores]
        if missing:
            raise InputError(
                f"score record of {record['system']} on {record['testset']}: no {', '.join(missing)}; "
                "evaluate with --metrics bleu,tok-bleu"
            )
        rows.append(
            {
                "experiment": experiment,
                "pair": pair,
                "variant": variant,
                "seed": seed,
                "testset": record["testset"],
                TOK_BLEU: float(scores["tok-bleu"]["score"]),
                BLEU: float(scores["bleu"]["score"]),
            }
        )
    if not rows:
        raise InputError("bleu table: no score records")
    frame = pd.DataFrame(rows)
    order = list(variants) if variants else list(dict.fromkeys(frame["variant"]))
    out = []
    for experiment, pair in dict.fromkeys(zip(frame["experiment"], frame["pair"], strict=True)):
        for variant in order:
            system = frame[
                (frame["experiment"] == experiment) & (frame["pair"] == pair) & (frame["variant"] == variant)
            ]
            for seed in dict.fromkeys(system["seed"]):
                block = system[system["seed"] == seed]
                out += block.to_dict("records")
                out.append(
                    {
                        "experiment": experiment,
                        "pair": pair,
                        "variant": variant,
                        "seed": seed,
                        "testset": MEAN,
                        **_test_mean(block, mean_testsets, f"{experiment}/{pair}/{variant}"),
                    }
                )
    return pd.DataFrame(out, columns=[*BLEU_KEYS[:3], "seed", "testset", TOK_BLEU, BLEU])


def _test_mean(block: pd.DataFrame, mean_testsets: Sequence[str] | None, system: str) -> dict[str, float]:
    """One replica's mean over its test sets (or exactly ``mean_testsets``, which it must have)."""
    averaged = block
    if mean_testsets:
        missing = [name for name in mean_testsets if name not in set(block["testset"])]
        if missing:
            raise InputError(
                f"bleu table: {system} has no scores on {', '.join(missing)}; "
                "the mean is over those test sets, so evaluate it on them"
            )
        averaged = block[block["testset"].isin(mean_testsets)]
    return {TOK_BLEU: float(averaged[TOK_BLEU].mean()), BLEU: float(averaged[BLEU].mean())}


def bleu_table(
    records: Sequence[Mapping[str, Any]],
    variants: Sequence[str] | None = None,
    mean_testsets: Sequence[str] | None = None,
    seeds: Sequence[object] | None = None,
) -> pd.DataFrame:
    """Rows ``experiment, pair, variant, testset, tok. BLEU, BLEU``: :func:`bleu_replicas` averaged
    over each system's seeds (with one seed, its scores as they are)."""
    csv, _, _ = replicated_bleu_table(bleu_replicas(records, variants, mean_testsets, seeds))
    return csv[[*BLEU_KEYS, TOK_BLEU, BLEU]]


def replicated_bleu_table(replicas: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame, list[object]]:
    """Tables 1-3 over seeds, from the rows of :func:`bleu_replicas`
    (:func:`nmtvariants.reporting.replicas.aggregate_replicas`): the CSV frame (``n``, each metric's
    mean and ``sd`` over seeds, each seed's score), the markdown frame (``mean ± sd``) and the seeds."""
    return aggregate_replicas(replicas, BLEU_KEYS, [TOK_BLEU, BLEU])


# --- Table 4: the shortcut variants ------------------------------------------------------------------


def describe_variant(switches: Mapping[str, Any] | None) -> str:
    """The shortcut options of a variant as the table shows them (``baseline`` without shortcuts)."""
    if (switches or {}).get("shortcuts") is None:
        return "baseline"
    options = {"kind": "lexical", **switches["shortcuts"]}
    return ", ".join(f"{key}={options[key]}" for key in SHORTCUT_OPTIONS if key in options)


def variants_table(
    bleu: pd.DataFrame, switches: Mapping[str, Mapping[str, Any] | None], baseline: str = "baseline"
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Table 4 from the ``mean`` rows of :func:`bleu_replicas`: one row per variant with its shortcut
    options, ``n`` (seeds), tok. BLEU and BLEU as mean and sample sd over the seeds' test means, and
    Δ BLEU, the difference of its mean sacreBLEU to that of the ``baseline`` variant of the same
    experiment and pair. Returns the CSV frame (each seed's scores after the means) and the markdown
    frame (``mean ± sd`` cells)."""
    means = bleu[bleu["testset"] == MEAN]
    if "seed" not in means:  # one score per system (bleu_table): a single replica
        means = means.assign(seed=UNRECORDED_SEED)
    csv, markdown, _ = aggregate_replicas(means, BLEU_KEYS[:3], [TOK_BLEU, BLEU])
    reference = {}
    for experiment, pair in dict.fromkeys(zip(csv["experiment"], csv["pair"], strict=True)):
        found = csv[(csv["experiment"] == experiment) & (csv["pair"] == pair) & (csv["variant"] == baseline)]
        if found.empty:
            raise InputError(f"table 4, {experiment} {pair}: no {baseline!r} variant to compare with")
        reference[experiment, pair] = float(found[BLEU].iloc[0])
    delta = [row[BLEU] - reference[row["experiment"], row["pair"]] for _, row in csv.iterrows()]
    shortcuts = [describe_variant(switches.get(variant)) for variant in csv["variant"]]
    for frame, after in ((csv, sd_column(BLEU)), (markdown, BLEU)):
        frame.insert(3, "shortcuts", shortcuts)
        frame.insert(frame.columns.get_loc(after) + 1, "Δ BLEU", delta)
    return csv, markdown


# --- the real-data comparison: sacreBLEU and chrF with a paired bootstrap against the baseline -----------

METRIC_NAMES = {"bleu": "BLEU", "chrf": "chrF", "chrf++": "chrF++", "ter": "TER"}


def bootstrap_table(
    results: Mapping[tuple[str, str], Mapping[str, Any]], baseline: str = "baseline"
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Rows ``variant, testset, n`` and per metric its score (the mean over the replicas, with the
    sample sd over them), the difference to ``baseline`` and the p-value, from the JSONs of
    ``nmtvariants significance`` keyed by (variant,
    test set); each holds the baseline's and the variant's scores on that test set. The baseline's rows
    come first (no difference, no p-value) and must agree across the variants' JSONs, which compare
    with the same baseline outputs. Returns the CSV frame and the markdown frame (``mean ± sd``)."""
    if not results:
        raise InputError("bootstrap table: no significance results")
    metrics = list(next(iter(results.values()))["metrics"])
    testsets = list(dict.fromkeys(testset for _, testset in results))
    variants = list(dict.fromkeys(variant for variant, _ in results))
    if baseline in variants:
        raise InputError(f"bootstrap table: {baseline!r} is the reference, not a variant to test")
    rows = []
    for testset in testsets:
        base: dict[str, Mapping[str, Any]] = {}
        for variant in variants:
            if (variant, testset) not in results:
                raise InputError(f"bootstrap table: no significance result of {variant!r} on {testset}")
            found = results[variant, testset]["metrics"]
            if list(found) != metrics:
                raise InputError(
                    f"bootstrap table: {variant!r} on {testset} tests {list(found)}, the others {metrics}"
                )
            for metric in metrics:
                side = found[metric]["baseline"]
                if abs(_side(base.setdefault(metric, side))[0] - _side(side)[0]) > 1e-9:
                    raise InputError(
                        f"bootstrap table, {testset}: the {metric} of {baseline!r} differs between the "
                        "variants' results; test every variant against the same baseline outputs"
                    )
        rows.append((baseline, testset, _bootstrap_cells(metrics, base)))
    for variant in variants:
        for testset in testsets:
            found = results[variant, testset]["metrics"]
            sides = {metric: found[metric]["system"] for metric in metrics}
            rows.append((variant, testset, _bootstrap_cells(metrics, sides, found)))
    columns, shown = ["variant", "testset", "n"], ["variant", "testset", "n"]
    for metric in metrics:
        name = METRIC_NAMES.get(metric, metric)
        columns += [name, sd_column(name), f"Δ {name}", f"p ({name})"]
        shown += [name, f"Δ {name}", f"p ({name})"]
    csv = pd.DataFrame([{"variant": v, "testset": t, **cells[0]} for v, t, cells in rows], columns=columns)
    markdown = pd.DataFrame([{"variant": v, "testset": t, **cells[1]} for v, t, cells in rows], columns=shown)
    return csv, markdown


def _side(block: Mapping[str, Any]) -> tuple[float, float, int]:
    """(mean, sample sd, replicas) of one system's scores in a significance JSON: the replica test's
    ``mean``, ``sd`` and ``scores``, or the one-output test's ``score``."""
    if "mean" in block and "scores" in block:
        sd = block.get("sd")
        return float(block["mean"]), math.nan if sd is None else float(sd), len(block["scores"])
    return float(block["score"]), math.nan, 1


def _bootstrap_cells(
    metrics: Sequence[str], sides: Mapping[str, Mapping[str, Any]], tested: Mapping[str, Any] | None = None
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The CSV cells and the markdown cells of one row of the bootstrap table."""
    csv: dict[str, Any] = {}
    shown: dict[str, Any] = {}
    for metric in metrics:
        name = METRIC_NAMES.get(metric, metric)
        mean, sd, count = _side(sides[metric])
        csv["n"] = shown["n"] = count
        csv[name], csv[sd_column(name)] = mean, sd
        shown[name] = format_mean_sd(mean, sd, count)
        for cells in (csv, shown):
            cells[f"Δ {name}"] = None if tested is None else float(tested[metric]["delta"])
            cells[f"p ({name})"] = None if tested is None else float(tested[metric]["p_value"])
    return csv, shown


# --- Table 5: parameters and training speed ---------------------------------------------------------


def params_speed_table(
    params: Mapping[str, int], speeds: Mapping[str, float], baseline: str = "baseline"
) -> pd.DataFrame:
    """Rows ``experiment, variant, parameters, parameters (K), tokens/s, relative speed`` (Table 5) for
    runs labelled ``experiment/variant``, in the order of ``params``; the relative speed is the run's
    training speed over that of the ``baseline`` variant of the same experiment."""
    rows = []
    for label, count in params.items():
        experiment, _, variant = label.rpartition("/")
        reference = f"{experiment}/{baseline}" if experiment else baseline
        if reference not in speeds:
            raise InputError(f"table 5: no {reference!r} run to compare the training speed of {label!r} with")
        rows.append(
            {
                "experiment": experiment,
                "variant": variant,
                "parameters": int(count),
                "parameters (K)": round(count / 1000),
                "tokens/s": float(speeds[label]),
                "relative speed": float(speeds[label]) / float(speeds[reference]),
            }
        )
    columns = ["experiment", "variant", "parameters", "parameters (K)", "tokens/s", "relative speed"]
    return pd.DataFrame(rows, columns=columns)


def read_count(path: PathLike) -> int:
    """The parameter count ``nmtvariants count-params`` printed (its first line)."""
    lines = list(read_lines(path))
    try:
        return int(lines[0])
    except (IndexError, ValueError):
        raise InputError(f"{path}:1: expected the parameter count of `nmtvariants count-params`") from None


# --- probes, similarity, gates ------------------------------------------------------------------------


def probe_breakdown(probes: pd.DataFrame, group_kind: str) -> pd.DataFrame:
    """Held-out probe accuracy per layer and group: rows ``variant, side, layer`` and one column per
    group of ``group_kind`` (``frequency_bin``: 1 = rarest .. 10; or a label grouping such as ``pos``),
    plus ``all``; rows in the CSV's order."""
    wanted = probes[probes["group_kind"] == group_kind]
    if wanted.empty:
        raise InputError(f"probe breakdown: no {group_kind!r} groups in the layer-probes CSV")
    overall = probes[probes["group_kind"] == "all"].set_index(["variant", "side", "layer"])["accuracy"]
    table = wanted.pivot_table(
        index=["variant", "side", "layer"], columns="group", values="accuracy", aggfunc="first", sort=False
    )
    groups = sorted(table.columns, key=lambda label: _group_order(str(label)))
    table = table[groups]
    table["all"] = overall.reindex(table.index)
    table.columns = [str(column) for column in table.columns]
    return table.reset_index()


def probe_breakdown_replicas(
    probes: Sequence[tuple[object, pd.DataFrame]], group_kind: str
) -> tuple[pd.DataFrame, pd.DataFrame, list[object]]:
    """:func:`probe_breakdown` of every replica (``probes``: seed, layer-probes CSV), collapsed to one
    row per ``variant, side, layer``: each group's mean accuracy over the seeds with its sample sd and
    ``n``. Returns the CSV frame (each seed's value at the end), the markdown frame (``mean ± sd``) and
    the seeds."""
    frames = [probe_breakdown(frame, group_kind).assign(seed=seed) for seed, frame in probes]
    long = pd.concat(frames, ignore_index=True)
    groups = [str(column) for column in long.columns if column not in ("variant", "side", "layer", "seed")]
    groups = sorted(groups, key=lambda label: (2, "") if label == "all" else _group_order(label))
    return aggregate_replicas(long, ["variant", "side", "layer"], groups)


def _group_order(label: str) -> tuple[int, int | str]:
    return (0, int(label)) if label.isdigit() else (1, label)


def layer_curves(frame: pd.DataFrame, value: str, side: str, group_kind: str | None = "all") -> pd.DataFrame:
    """The long CSV of one ``layers`` figure: ``variant, layer, <value>`` of one side (probe accuracy
    overall, or a similarity column), in the given order."""
    rows = frame[frame["side"] == side]
    if group_kind is not None and "group_kind" in rows:
        rows = rows[rows["group_kind"] == group_kind]
    if rows.empty:
        raise InputError(f"no {side} rows for the {value} curves")
    return rows[["variant", "layer", value]].reset_index(drop=True)


GATE_KEYS = ["variant", "side", "layer", "attention", "gate", "positions"]
GATE_METRICS = ["mean", "std", "above_half"]


def gate_table(
    gates: Sequence[tuple[object, pd.DataFrame]],
) -> tuple[pd.DataFrame, pd.DataFrame, list[object]]:
    """Gate activations per variant, side, layer, attention and gate (key/value) from each replica's
    gate-stats CSV (``gates``: seed, frame): the activation's mean, its std over the positions and
    the fraction above 0.5, each as the mean over the seeds with its sample sd and ``n``. Returns the
    CSV frame (each seed's value at the end), the markdown frame and the seeds."""
    long = pd.concat([frame.assign(seed=seed) for seed, frame in gates], ignore_index=True)
    return aggregate_replicas(long[[*GATE_KEYS, *GATE_METRICS, "seed"]], GATE_KEYS, GATE_METRICS)


# --- ContraWSD -------------------------------------------------------------------------------------------


def contrawsd_table(
    results: Sequence[tuple[str, object, Mapping[str, Any]]],
) -> tuple[pd.DataFrame, pd.DataFrame, list[object]]:
    """Rows ``variant, breakdown, group, total, correct, accuracy`` from the JSON reports of
    ``nmtvariants contrawsd`` per replica (``results``: variant label, seed, report): overall, per
    ambiguous word sense (``word:sense``) and per frequency class of the sense; ``correct`` and
    ``accuracy`` are the means over the seeds with their sample sd and ``n``. Returns the CSV frame
    (each seed's value at the end), the markdown frame and the seeds."""
    rows = []
    for variant, seed, result in results:
        rows.append(
            {
                "variant": variant,
                "seed": seed,
                "breakdown": "overall",
                "group": "all",
                "correct": int(result["correct"]),
                "total": int(result["n_elements"]),
                "accuracy": float(result["accuracy"]),
            }
        )
        for kind, key, label in (("sense", "by_category", "category"), ("frequency", "by_frequency", "bin")):
            for entry in result[key]:
                rows.append(
                    {
                        "variant": variant,
                        "seed": seed,
                        "breakdown": kind,
                        "group": entry[label],
                        "correct": int(entry["correct"]),
                        "total": int(entry["total"]),
                        "accuracy": float(entry["accuracy"]),
                    }
                )
    long = pd.DataFrame(
        rows, columns=["variant", "seed", "breakdown", "group", "correct", "total", "accuracy"]
    )
    return aggregate_replicas(long, ["variant", "breakdown", "group", "total"], ["correct", "accuracy"])


# --- source POS per BPE token ---------------------------------------------------------------------------


def pos_labels(sentence: Sentence, bpe_line: str, where: str) -> list[str]:
    """One UPOS per BPE token: every subword of a word takes the UPOS of the parsed word (a multiword
    token: its syntactic head word's) in which that word's first character lies. Words are matched by
    their characters, spaces aside and case-insensitively (truecasing changes the first word), with
    Moses' ``@-@`` (aggressive hyphen splitting) read as ``-``."""
    owners: list[str] = []
    characters: list[str] = []
    for form, ids in surface_tokens(sentence):
        upos = sentence.words[head_word(sentence, ids) - 1].upos
        for char in form.lower():
            owners.append(upos)
            characters.append(char)
    labels: list[str] = []
    position = 0
    for word, first, end in bpe_word_spans(bpe_line):
        text = ("-" if word == HYPHEN else word).lower()
        if characters[position : position + len(text)] != list(text):
            found = "".join(characters[position : position + len(text)]) or "the end of the parse"
            raise InputError(
                f"{where}: BPE word {word!r} at character {position + 1} but {found!r} in the parse; "
                "parse the same text the BPE was applied to"
            )
        labels += [owners[position]] * (end - first)
        position += len(text)
    if position != len(characters):
        raise InputError(f"{where}: the BPE line ends before the parse does; parse the same text")
    return labels


def pos_lines(
    sentences: Iterable[Sentence], bpe_lines: Iterable[str], conllu: str, bpe: str
) -> Iterator[str]:
    """The POS grouping file (one label per BPE token, line-parallel) of a parsed, BPE'd text."""
    parsed, lines = list(sentences), list(bpe_lines)
    if len(parsed) != len(lines):
        raise InputError(f"{conllu} has {len(parsed)} sentences but {bpe} has {len(lines)} lines")
    for number, (sentence, line) in enumerate(zip(parsed, lines, strict=True), start=1):
        yield " ".join(pos_labels(sentence, line, f"{bpe}:{number} vs {conllu}:{sentence.line}"))


def target_pos_labels(tags: Sequence[str], bpe_line: str, where: str) -> list[str]:
    """One UPOS per BPE token from the tags of the line's words (toyworld's target ``.pos``: one tag per
    Moses token before hyphen splitting): every piece takes its word's tag, ``@-@`` and the pieces it
    glues included (:func:`nmtvariants.text.subword_map.word_ids`)."""
    pieces = bpe_line.split()
    ids = word_ids(pieces)
    words = ids[-1] + 1 if ids else 0
    if words != len(tags):
        raise InputError(
            f"{where}: {len(tags)} tags but the BPE line has {words} words; "
            "give the tags of the same sentences, one per Moses token"
        )
    return [tags[word] for word in ids]


def target_pos_lines(
    tag_lines: Iterable[str], bpe_lines: Iterable[str], tags: str, bpe: str
) -> Iterator[str]:
    """The POS grouping file (one label per BPE token, line-parallel) of a tagged, BPE'd target text."""
    tagged, lines = list(tag_lines), list(bpe_lines)
    if len(tagged) != len(lines):
        raise InputError(f"{tags} has {len(tagged)} lines but {bpe} has {len(lines)}")
    for number, (line_tags, line) in enumerate(zip(tagged, lines, strict=True), start=1):
        yield " ".join(target_pos_labels(line_tags.split(), line, f"{bpe}:{number} vs {tags}:{number}"))
