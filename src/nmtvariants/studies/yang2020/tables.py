"""Yang et al. (2020), *On the sub-layer functionalities of Transformer decoder*: the study's tables
and the long CSVs its figures are drawn from, built from the workflow's result files.

The study's systems are the (experiment, pair, variant) triples of every experiment with
``study: yang2020``; each is described by its decoder layout (``variant.decoder_layout``, named as in
:data:`nmtvariants.models.variants.LAYOUT_NAMES`), its size preset and its decoder depth (the preset's
unless ``model.decoder_layers`` overrides it). From those:

* Table 1: BLEU of every layout at the preset's depth;
* Table 2: BLEU of the standard decoder at every depth the config trains;
* Table 4: the simplified against the standard decoder (same experiment, pair and depth): BLEU,
  parameters (counted on the trained checkpoint, as ``count-params`` counts them), training speed
  (target tokens per second of the run's own ``train_log.csv``: all training tokens over the summed
  time of the logging windows, validation excluded) and decoding speed (sentences per second of
  :func:`decode_speed`, both models timed in one job, alternating, so that they share the machine's
  state);
* Figure 3 (TEM, SEM, IFM and the encoder output of the standard decoder), Figure 8 (IFM's
  operations Add-NormI, FF, Add-Norm) and Figure 10 (simplified against standard): reconstruction
  perplexity per layer from the ``reconstruction-probes`` CSVs, one figure per side reconstructed;
* Figures 4-7 and the ``layer_aer`` table: AER and cumulative coverage per layer (``layer-aer``'s
  computation, with words glued across Moses' hyphen splits: :func:`gold_aligned_set`), one line per
  layout and depth; on a corpus's own gold set (toyworld) or on the Hansards EN-FR gold set, whose
  text reaches the model through its own chain (:func:`chain_gold_text`).
"""

from __future__ import annotations

import csv
import math
import statistics
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from nmtvariants.config import experiment_systems
from nmtvariants.errors import ConfigError, InputError
from nmtvariants.evaluation.results import read_scores_json
from nmtvariants.fileio import PathLike, atomic_write
from nmtvariants.inference.defaults import MAX_LEN_A, MAX_LEN_B
from nmtvariants.models.config import ALIASES, PRESETS, model_config
from nmtvariants.models.variants import LAYOUT_NAMES, decoder_layout, parse_layout
from nmtvariants.reporting.deviations import Deviation
from nmtvariants.reporting.manifest import Entry
from nmtvariants.reporting.replicas import aggregate_replicas, seed_column
from nmtvariants.reporting.results import metric_label
from nmtvariants.text.subword_map import HYPHEN
from nmtvariants.training.logging_utils import training_speed  # noqa: F401 (re-exported)

STUDY = "yang2020"
STANDARD = "standard"
SIMPLIFIED = "simplified"
TABLE_KEYS = ("layouts", "depth", "simplified", "aer")  # the kinds of `yang2020-table`
BLEU_TABLES = ("layouts", "depth", "simplified")
# Every known difference from the paper behind the study's tables (reporting/deviations.py). ``when``:
# a condition table_conditions finds among a table's systems.
DEVIATIONS: tuple[Deviation, ...] = (
    Deviation(
        "checkpoint_average",
        BLEU_TABLES,
        "Each system is the average of its last checkpoints (`average_last`); the paper selects the "
        "checkpoint with the lowest validation loss.",
    ),
    Deviation(
        "chinese_segmentation",
        BLEU_TABLES,
        "Chinese is not word-segmented before BPE (Moses tokenisation only; the paper does not say how "
        "it segmented); BLEU splits Chinese characters (sacreBLEU's zh tokenizer), as the paper does.",
        when="chinese",
    ),
    Deviation(
        "aer_gold",
        ("aer",),
        "AER gold sets: a corpus's own gold alignments (toyworld) or the Hansards EN-FR gold set for "
        "EN-FR models; the paper's RWTH DE-EN (licence-gated) and Liu & Sun ZH-EN gold sets are not "
        "available here, so EN-DE and EN-ZH models get no AER.",
    ),
)


def table_conditions(systems: Sequence[System]) -> set[str]:
    """The conditions of the conditional deviations that a table's systems meet (a Chinese side)."""
    return {"chinese"} if any("zh" in system.pair.split("-") for system in systems) else set()


@dataclass(frozen=True)
class System:
    """One trained system of the study: where its results live and what decoder it has."""

    experiment: str
    pair: str
    variant: str
    layout: str
    size: str
    decoder_layers: int
    default_depth: bool  # the preset's depth (Tables 1 and 4) rather than a depth ablation


SYSTEM_INFO = ("layout", "size", "decoder_layers", "default_depth")  # what a manifest entry's info holds


def system_info(system: System) -> dict[str, Any]:
    """What a manifest entry (nmtvariants.reporting.manifest) says of its system besides its name."""
    return {key: getattr(system, key) for key in SYSTEM_INFO}


def manifest_system(entry: Entry) -> System:
    """The system of a manifest entry: its experiment, pair and variant, and :func:`system_info`."""
    missing = [key for key in SYSTEM_INFO if key not in entry.info]
    if missing or None in (entry.experiment, entry.pair, entry.variant):
        raise InputError(
            f"{entry.where}: a yang2020 entry names its experiment, pair and variant and has "
            f"{', '.join(SYSTEM_INFO)} in its info (missing: {', '.join(missing) or 'a name'})"
        )
    info = {key: entry.info[key] for key in SYSTEM_INFO}
    return System(str(entry.experiment), str(entry.pair), str(entry.variant), **info)


def layout_name(variant: dict[str, Any] | None) -> str:
    """The layout's name (``standard``, ``sem_ifm``, ...), or its sub-layer list when unnamed."""
    kinds = decoder_layout(dict(variant or {}))
    for name, spec in LAYOUT_NAMES.items():
        if tuple(parse_layout(spec)) == tuple(kinds):
            return name
    return ",".join(kinds)


def study_systems(config: dict[str, Any]) -> list[System]:
    """Every (experiment, pair, variant) of the study's experiments, in config order."""
    systems = []
    for name, spec in config.get("experiments", {}).items():
        if spec["study"] != STUDY:
            continue
        model = dict(spec["model"])
        preset = model.pop("preset", "base")
        for pair, variant in experiment_systems(spec):
            switches = spec["variants"][variant]
            cfg = model_config(preset, model, dict(switches or {}))
            systems.append(
                System(
                    name,
                    pair,
                    variant,
                    layout_name(switches),
                    preset,
                    cfg.decoder_layers,
                    cfg.decoder_layers == PRESETS[ALIASES.get(preset, preset)]["decoder_layers"],
                )
            )
    return systems


def layout_systems(systems: Sequence[System]) -> list[System]:
    """Table 1's systems: every layout at the preset's depth."""
    return [s for s in systems if s.default_depth]


def depth_systems(systems: Sequence[System]) -> list[System]:
    """Table 2's systems: the standard decoder at every depth."""
    return [s for s in systems if s.layout == STANDARD]


def simplified_pairs(systems: Sequence[System]) -> list[tuple[System, System]]:
    """Table 4's (standard, simplified) pairs: same experiment, pair and depth."""
    pairs = []
    for simplified in systems:
        if simplified.layout != SIMPLIFIED:
            continue
        standard = next(
            (
                s
                for s in systems
                if s.layout == STANDARD
                and (s.experiment, s.pair, s.decoder_layers)
                == (simplified.experiment, simplified.pair, simplified.decoder_layers)
            ),
            None,
        )
        if standard is not None:
            pairs.append((standard, simplified))
    return pairs


def system_label(system: System, systems: Sequence[System]) -> str:
    """A figure's line name: the variant, prefixed by experiment and pair when several are drawn."""
    places = {(s.experiment, s.pair) for s in systems}
    return system.variant if len(places) <= 1 else f"{system.experiment} {system.pair} {system.variant}"


# --- tables --------------------------------------------------------------------------------------


def _metrics(path: PathLike) -> dict[str, float]:
    record = read_scores_json(path)
    scores = record.get("scores")
    if not isinstance(scores, dict):
        raise InputError(f"{path}: no `scores` mapping; re-run the evaluate step")
    return {
        metric_label(metric, result): float(result["score"])
        for metric, result in scores.items()
        if isinstance(result, dict) and "score" in result
    }


# A table over training seeds (nmtvariants.reporting.replicas): one row per system and test set, each
# metric's mean over the system's replicas with its sample sd and n, each seed's value in the CSV. A
# difference to the standard decoder (ΔBLEU) and a ratio are taken between the means: the replicas of
# two layouts are independent draws, so no seed of one is the partner of a seed of the other.
BLEU_KEYS = ["experiment", "pair", "testset", "size", "decoder layers", "layout", "variant"]
DELTA = "ΔBLEU"
# (system, test set, score file, training seed): one replica's scores on one test set
ScoreEntry = tuple[System, str, PathLike, object]


@dataclass
class ReplicaTable:
    """A table over training seeds: ``csv`` (means, ``<metric> sd``, ``n`` and each seed's value),
    ``markdown`` (``mean ± sd`` cells) and the ``seeds`` behind it, in first-seen order."""

    csv: pd.DataFrame
    markdown: pd.DataFrame
    seeds: list[object]

    def add(self, name: str, values: Sequence[Any], digits: int = 2) -> None:
        """A column computed from the rows' means (a difference, a ratio, a count), placed after the
        aggregated columns in the CSV (before the per-seed ones) and last in the markdown."""
        per_seed = [
            column
            for column in self.csv.columns
            if any(str(column).endswith(seed_column("", seed)) for seed in self.seeds)
        ]
        self.csv.insert(len(self.csv.columns) - len(per_seed), name, list(values))
        self.markdown[name] = [_cell(value, digits) for value in values]

    def drop(self, column: str) -> None:
        self.csv = self.csv.drop(columns=[column])
        self.markdown = self.markdown.drop(columns=[column])


def _cell(value: Any, digits: int) -> Any:
    """A markdown cell: integers as they are, floats with ``digits`` decimals, NaN as empty."""
    if isinstance(value, float):
        return "" if math.isnan(value) else f"{value:.{digits}f}"
    return value


def score_rows(entries: Sequence[ScoreEntry]) -> pd.DataFrame:
    """One row per replica and test set: the system's keys (:data:`BLEU_KEYS`), its ``seed`` and every
    metric of its score file."""
    rows = []
    for system, testset, path, seed in entries:
        rows.append(
            {
                "experiment": system.experiment,
                "pair": system.pair,
                "testset": testset,
                "size": system.size,
                "decoder layers": system.decoder_layers,
                "layout": system.layout,
                "variant": system.variant,
                "seed": seed,
                **_metrics(path),
            }
        )
    return pd.DataFrame(rows)


def _aggregate(long: pd.DataFrame) -> ReplicaTable:
    metrics = [column for column in long.columns if column not in (*BLEU_KEYS, "seed")]
    return ReplicaTable(*aggregate_replicas(long, BLEU_KEYS, metrics))


def bleu_table(entries: Sequence[ScoreEntry]) -> ReplicaTable:
    """One row per (system, test set) over its replicas, every metric of its score files as mean ±
    sample sd, and ``ΔBLEU``: the difference of its mean BLEU to the mean BLEU of the standard decoder
    of the same experiment, pair, test set and depth (empty when the config has no such standard
    decoder)."""
    table = _aggregate(score_rows(entries))
    _add_delta(table)
    return table


def _add_delta(table: ReplicaTable) -> None:
    """``ΔBLEU``: each row's mean BLEU less the standard decoder's of its place (NaN without one)."""
    if table.csv.empty or "BLEU" not in table.csv:
        return
    standard = _standard_values(table.csv, "BLEU")
    table.add(DELTA, [row["BLEU"] - standard.get(_place(row), math.nan) for _, row in table.csv.iterrows()])


def _place(row: pd.Series) -> tuple[Any, ...]:
    """What a layout is compared within: experiment, pair, test set and depth."""
    return tuple(row[key] for key in ("experiment", "pair", "testset", "decoder layers"))


def _standard_values(frame: pd.DataFrame, column: str) -> dict[tuple[Any, ...], float]:
    return {_place(row): row[column] for _, row in frame.iterrows() if row["layout"] == STANDARD}


TRAIN_SPEED = "train tok/s"


def simplified_table(
    entries: Sequence[ScoreEntry],
    parameters: dict[System, int],
    train_speed: dict[tuple[System, object], float],
    decode_speed: dict[System, float],
) -> ReplicaTable:
    """Table 4: one row per (system, test set) of :func:`simplified_pairs` with BLEU and training
    tokens/s over the system's replicas (``train_speed`` per (system, seed): each seed's run was timed
    while it trained), its parameters and decoding sentences/s (one value per system: every seed has the
    same architecture, and the speed job times one model pair), and each as a ratio to the standard
    decoder (of the means)."""
    long = score_rows(entries)
    long[TRAIN_SPEED] = [train_speed[(system, seed)] for system, _, _, seed in entries]
    table = _aggregate(long)
    _add_delta(table)
    systems = {(s.experiment, s.pair, s.variant, s.decoder_layers, s.layout): s for s, _, _, _ in entries}
    rows = [
        systems[(row["experiment"], row["pair"], row["variant"], row["decoder layers"], row["layout"])]
        for _, row in table.csv.iterrows()
    ]
    table.add("parameters", [parameters[s] for s in rows])
    table.add("decode sent/s", [decode_speed[s] for s in rows])
    standard = {(s.experiment, s.pair, s.decoder_layers): s for s in rows if s.layout == STANDARD}
    train_means = dict(zip(rows, table.csv[TRAIN_SPEED], strict=True))
    for column, values in (
        ("parameters", parameters),
        (TRAIN_SPEED, train_means),
        ("decode sent/s", decode_speed),
    ):
        table.add(
            f"{column} ratio",
            [values[s] / values[standard[(s.experiment, s.pair, s.decoder_layers)]] for s in rows],
        )
    table.drop("variant")
    return table


# --- figures -------------------------------------------------------------------------------------

PROBE_COLUMNS = ("layer", "perplexity", "series")
FIGURE_MODULES = {
    "fig3": ("Encoder", "TEM", "SEM", "IFM"),
    "fig8": ("Add-NormI", "FF", "Add-Norm"),
    "fig10": ("TEM", "SEM", "IFM"),
}


def read_probe_csv(path: PathLike) -> pd.DataFrame:
    """A ``reconstruction-probes`` CSV, checked to hold what the figures read."""
    try:
        frame = pd.read_csv(path, keep_default_na=False)
    except FileNotFoundError:
        raise InputError(f"{path}: no such probe CSV; run reconstruction-probes first") from None
    missing = {"target_side", "layer", "module", "perplexity"} - set(frame.columns)
    if missing:
        raise InputError(
            f"{path}: columns {', '.join(sorted(missing))} missing; re-run reconstruction-probes"
        )
    return frame


def probe_figure_rows(
    figure: str, side: str, probes: Sequence[tuple[System, pd.DataFrame]]
) -> list[dict[str, Any]]:
    """The long CSV rows of Figure 3, 8 or 10 for one reconstructed ``side`` (source/target).

    Figures 3 and 8 draw the standard decoders, one line per module; Figure 10 draws the standard
    and the simplified decoders, one line per (variant, module). A system's several replicas (one
    ``probes`` frame per training seed) give several rows of one line, which the figure draws as their
    mean with a ± sd band."""
    if figure not in FIGURE_MODULES:
        raise ConfigError(f"figure {figure!r}: one of {', '.join(FIGURE_MODULES)}")
    modules = FIGURE_MODULES[figure]
    layouts = (STANDARD, SIMPLIFIED) if figure == "fig10" else (STANDARD,)
    drawn = [(s, f) for s, f in probes if s.layout in layouts]
    systems = list(dict.fromkeys(s for s, _ in drawn))
    rows = []
    for system, frame in drawn:
        label = system_label(system, systems)
        for _, row in frame[frame["target_side"] == side].iterrows():
            if row["module"] not in modules:
                continue
            name = row["module"] if figure != "fig10" and len(systems) == 1 else f"{label} {row['module']}"
            rows.append({"layer": int(row["layer"]), "perplexity": float(row["perplexity"]), "series": name})
    if not rows:
        raise InputError(f"{figure} ({side}): none of the probe CSVs has rows for {', '.join(modules)}")
    return rows


def aer_figure_rows(metric: str, tables: Sequence[tuple[System, PathLike]]) -> list[dict[str, Any]]:
    """Figures 4-7: ``metric`` (``aer`` or ``coverage``) per decoder layer from ``layer-aer`` CSVs,
    one line per system (its variant; depth named when the systems' depths differ), its replicas'
    rows on that line (drawn as their mean with a ± sd band)."""
    systems = list(dict.fromkeys(s for s, _ in tables))
    depths = {s.decoder_layers for s in systems}
    rows = []
    for system, path in tables:
        frame = pd.read_csv(path)
        if metric not in frame or "layer" not in frame:
            raise InputError(f"{path}: no {metric!r} or 'layer' column; re-run layer-aer")
        label = system_label(system, systems)
        if len(depths) > 1:
            label = f"{label} ({system.decoder_layers} layers)"
        rows += [
            {"layer": int(layer), metric: float(value), "series": label}
            for layer, value in zip(frame["layer"], frame[metric], strict=True)
        ]
    return rows


AER_COLUMNS = ("layer", "aer", "precision", "recall", "coverage")
GOLD_LABELS = {"own": "own test set", "hansards": "Hansards EN-FR"}
# layer-aer's CSV column -> the table's column
AER_METRICS = {"aer": "AER", "precision": "precision", "recall": "recall", "coverage": "cumulative coverage"}


def layer_aer_table(
    entries: Sequence[tuple[System, str, str, PathLike, object]],
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The AER-per-layer table: one row per (system, decoder layer) from ``layer-aer`` CSVs, one per
    replica (``entries``: system, the corpus the model was trained on, the gold set it was scored on,
    ``own`` or ``hansards``, the CSV and the training seed). Each metric is the mean over the system's
    seeds with its sample sd and ``n``. Returns the CSV frame (each seed's value at the end) and the
    markdown frame (``mean ± sd``)."""
    rows = []
    for system, corpus, gold, path, seed in entries:
        try:
            frame = pd.read_csv(path)
        except FileNotFoundError:
            raise InputError(f"{path}: no layer-aer CSV; run yang2020-layer-aer first") from None
        missing = set(AER_COLUMNS) - set(frame.columns)
        if missing:
            raise InputError(f"{path}: columns {', '.join(sorted(missing))} missing; re-run layer-aer")
        for _, row in frame.iterrows():
            rows.append(
                {
                    "experiment": system.experiment,
                    "pair": system.pair,
                    "layout": system.layout,
                    "decoder layers": system.decoder_layers,
                    "trained on": corpus,
                    "gold": GOLD_LABELS.get(gold, gold),
                    "layer": int(row["layer"]),
                    "seed": seed,
                    **{label: float(row[column]) for column, label in AER_METRICS.items()},
                }
            )
    keys = ["experiment", "pair", "layout", "decoder layers", "trained on", "gold", "layer"]
    csv, markdown, _ = aggregate_replicas(pd.DataFrame(rows), keys, list(AER_METRICS.values()))
    return csv, markdown


def write_rows(path: PathLike, rows: Sequence[dict[str, Any]]) -> None:
    """Rows as CSV (columns in first-row order), atomically."""
    if not rows:
        raise InputError(f"{path}: nothing to write")
    with atomic_write(path) as out:
        writer = csv.DictWriter(out, fieldnames=list(rows[0]), lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)


# --- the gold-aligned test set ------------------------------------------------------------------


def gold_aligned_set(
    src: PathLike,
    tgt: PathLike,
    gold: PathLike,
    fmt: str = "pharaoh",
    reverse: bool = False,
    words: tuple[PathLike, PathLike] | None = None,
) -> Any:
    """``layer-aer``'s test set with words glued across Moses' hyphen splits (``dark @-@ blue`` is
    one word, as gold annotations index the words before hyphen splitting); every gold link must
    fall inside its sentence's words, and with ``words`` (the gold's own tokens) every line must
    have exactly as many words (InputError naming the line otherwise)."""
    from nmtvariants.evaluation.layer_alignment import read_alignment_set

    return read_alignment_set(src, tgt, gold, fmt, reverse=reverse, words=words, hyphen=HYPHEN)


def chain_gold_text(
    corpus_dir: PathLike, lang: str, preprocess: dict[str, Any], source: PathLike, output: PathLike
) -> int:
    """Run a gold set's tokenised text (e.g. the Hansards English or French) through the trained
    chain of ``corpus_dir`` (``data/<corpus>/<pair>``: the model's own truecaser and BPE, with the
    corpus's ``preprocess`` settings), keeping the gold's tokens: the gold indexes them, so they are
    never re-tokenised, only normalised, escaped and hyphen-split as the corpus was. Every line's
    pieces must map back to as many words as the line has tokens (InputError naming ``source`` and
    the line otherwise). Returns the number of lines written to ``output``."""
    from nmtvariants.fileio import read_lines
    from nmtvariants.text.chain import ChainSettings, TrainedChain

    chain = TrainedChain.from_corpus_dir(corpus_dir, lang, ChainSettings.from_preprocess(preprocess))
    lines = list(chain.apply(read_lines(source), str(source), pretokenized=True))
    if not lines:
        raise InputError(f"{source}: no sentences to run through the chain")
    with atomic_write(output) as out:
        out.writelines(f"{line}\n" for line in lines)
    return len(lines)


# --- decoding speed ------------------------------------------------------------------------------


@dataclass
class SpeedSettings:
    beam_size: int = 5
    alpha: float = 0.6
    max_len_a: float = MAX_LEN_A  # the workflow passes the experiment's `evaluate:` values
    max_len_b: int = MAX_LEN_B
    batch_size: int = 64
    rounds: int = 3
    device: str = "cpu"


def decode_speed(
    models: dict[str, Any], vocab: Any, lines: Sequence[str], settings: SpeedSettings
) -> dict[str, Any]:
    """Sentences per second of beam search for each model over ``lines``: one warm-up pass each,
    then ``settings.rounds`` rounds that time every model once in turn (the median round counts),
    so that the models share the machine's state (threads, caches, other jobs) as far as possible."""
    from nmtvariants.inference.translate import translate_lines

    if settings.rounds < 1:
        raise ConfigError(f"rounds must be >= 1, got {settings.rounds}")
    search = {
        "beam_size": settings.beam_size,
        "alpha": settings.alpha,
        "max_len_a": settings.max_len_a,
        "max_len_b": settings.max_len_b,
        "batch_size": settings.batch_size,
        "device": settings.device,
    }
    for model in models.values():
        translate_lines(model, vocab, lines[: settings.batch_size], **search)
    timings: dict[str, list[float]] = {name: [] for name in models}
    for _ in range(settings.rounds):
        for name, model in models.items():
            start = time.perf_counter()
            translate_lines(model, vocab, lines, **search)
            timings[name].append(time.perf_counter() - start)
    return {
        "settings": asdict(settings),
        "sentences": len(lines),
        "seconds": timings,
        "sentences_per_second": {name: len(lines) / statistics.median(t) for name, t in timings.items()},
    }


def read_decode_speed(path: PathLike, variant: str) -> float:
    import json

    try:
        record = json.loads(Path(path).read_text(encoding="utf-8"))
        return float(record["sentences_per_second"][variant])
    except FileNotFoundError:
        raise InputError(f"{path}: no decoding-speed record; run the yang2020_decode_speed rule") from None
    except (KeyError, TypeError, ValueError, json.JSONDecodeError):
        raise InputError(
            f"{path}: no sentences_per_second for {variant!r}; re-run yang2020_decode_speed"
        ) from None
