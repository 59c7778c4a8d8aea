"""Configuration validation with messages that name the offending key's path.

Snakemake's own ``validate`` reports a schema violation without saying *where* it is; for a nested
research config that is the most useful part, so we check first with jsonschema and report
``experiments.baseline.train.max_updates: 'x' is not of type 'integer'``.
"""

from __future__ import annotations

import copy
import hashlib
import json
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from nmtvariants.errors import ConfigError
from nmtvariants.layout import bpe_folder

if TYPE_CHECKING:  # imported where a config is checked: `train` and `translate` read run ids and
    # replica names from here but check no workflow config, and a GPU machine's image lacks jsonschema
    import jsonschema


def key_path(error: jsonschema.ValidationError) -> str:
    """Dotted path of the config key an error is about (list items as ``[i]``)."""
    parts: list[str] = []
    for part in error.absolute_path:
        parts.append(f"[{part}]" if isinstance(part, int) else f".{part}")
    path = "".join(parts).lstrip(".")
    if error.validator == "additionalProperties":
        extra = sorted(set(error.instance) - set(error.schema.get("properties", {})))
        unknown = ", ".join(f"{path + '.' if path else ''}{name}" for name in extra)
        return unknown or path or "<top level>"
    return path or "<top level>"


def load_schema(schema_path: str | Path) -> dict[str, Any]:
    with open(schema_path, encoding="utf-8") as handle:
        return yaml.safe_load(handle)


def check_config(config: dict[str, Any], schema_path: str | Path, source: str = "config") -> None:
    """Raise :class:`ConfigError` listing every violation with the key's path."""
    import jsonschema

    schema = load_schema(schema_path)
    validator = jsonschema.Draft202012Validator(schema)
    errors = sorted(validator.iter_errors(config), key=lambda e: list(map(str, e.absolute_path)))
    if not errors:
        return
    lines = []
    for error in errors:
        message = error.message
        if error.validator == "additionalProperties":
            message = "unknown key (check the spelling against config.yaml and the schema)"
        lines.append(f"  {key_path(error)}: {message}")
    raise ConfigError(f"invalid {source} ({schema_path}):\n" + "\n".join(lines))


def _relocate(message: str, experiment: str, variant: str, own_train: Sequence[str] = ()) -> str:
    """Rewrite the library's section paths (train.x, model.x, variant.x) as config key paths, in one
    pass (a rewritten path is not rewritten again); the train keys in ``own_train`` are the variant's
    own (``variant_train``)."""
    where = f"experiments.{experiment}"
    prefixes = {
        **{rf"train\.{re.escape(key)}(?!\w)": f"{where}.variant_train.{variant}.{key}" for key in own_train},
        r"model\.variant\.": f"{where}.variants.{variant}.",
        r"model\.variant:": f"{where}.variants.{variant}:",
        r"variant\.": f"{where}.variants.{variant}.",
        r"model\.": f"{where}.model.",
        r"model:": f"{where}.model:",
        r"train\.": f"{where}.train.",
    }
    patterns = list(prefixes)
    combined = re.compile("|".join(f"(?<![\\w.])(?P<p{i}>{pattern})" for i, pattern in enumerate(patterns)))
    return combined.sub(lambda match: prefixes[patterns[int(match.lastgroup[1:])]], message)


def check_experiments(experiments: dict[str, Any]) -> None:
    """Build every experiment's run config and model config once, so that a wrong model, variant or
    trainer key stops the workflow at start-up (with its path) instead of hours later in a job."""
    from nmtvariants.models import model_config
    from nmtvariants.models.variants import check_variant
    from nmtvariants.training.train_config import parse_run_config

    placeholder_data = {"train_src": "-", "train_tgt": "-", "vocab": "-"}
    for name, experiment in experiments.items():
        stray = sorted(set(experiment.get("inputs") or {}) - set(experiment["variants"]))
        if stray:
            raise ConfigError(
                f"experiments.{name}.inputs: {', '.join(stray)} not among the variants "
                f"({', '.join(experiment['variants'])}); name the variant whose encoders read the inputs"
            )
        check_variant_pairs(name, experiment)
        check_variant_train(name, experiment)
        check_replica_names(name, experiment)
        for variant_name, variant in experiment["variants"].items():
            raw = {
                "data": placeholder_data,
                "model": experiment["model"],
                "variant": dict(variant or {}),
                "train": variant_train(experiment, variant_name),
            }
            try:
                run = parse_run_config(raw)
                overrides = {key: value for key, value in run.model.items() if key != "preset"}
                model_config(run.model.get("preset", "base"), overrides, run.variant)
                check_variant(run.variant)
            except ConfigError as error:
                own_train = list((experiment.get("variant_train") or {}).get(variant_name, {}))
                message = _relocate(str(error), name, variant_name, own_train)
                raise ConfigError(f"invalid config: {message}") from None


def check_variant_pairs(name: str, experiment: Mapping[str, Any]) -> None:
    """``variant_pairs`` names variants of the experiment and pairs among its pairs."""
    restricted = experiment.get("variant_pairs") or {}
    stray = sorted(set(restricted) - set(experiment["variants"]))
    if stray:
        raise ConfigError(
            f"experiments.{name}.variant_pairs: {', '.join(stray)} not among the variants "
            f"({', '.join(experiment['variants'])})"
        )
    for variant, pairs in restricted.items():
        missing = [pair for pair in pairs if pair not in experiment["pairs"]]
        if missing:
            raise ConfigError(
                f"experiments.{name}.variant_pairs.{variant}: {', '.join(missing)} not among the "
                f"experiment's pairs ({', '.join(experiment['pairs'])})"
            )


def check_variant_train(name: str, experiment: Mapping[str, Any]) -> None:
    """``variant_train`` names variants of the experiment."""
    stray = sorted(set(experiment.get("variant_train") or {}) - set(experiment["variants"]))
    if stray:
        raise ConfigError(
            f"experiments.{name}.variant_train: {', '.join(stray)} not among the variants "
            f"({', '.join(experiment['variants'])})"
        )


def variant_train(experiment: Mapping[str, Any], variant: str) -> dict[str, Any]:
    """The experiment's train settings with the variant's own (``variant_train``) over them: e.g. the
    multi-task baseline's larger batches, which give it the others' translation tokens per update."""
    return {**experiment["train"], **(experiment.get("variant_train") or {}).get(variant, {})}


# --- replicas: one training run per seed ---------------------------------------------------------
#
# An experiment's `seeds:` multiplies its runs: each (pair, variant) is trained once per seed, and each
# of those replicas has its own result folder. The first seed's replica keeps the variant's own name,
# so that a one-seed config (the default: the top-level `seed` alone) keeps today's run ids and
# result paths, and so that a study's rule that knows nothing of seeds still finds one replica under
# the variant's name; every further seed is the variant's name with ``-seed<N>``. That name is made and
# read here and nowhere else (replica_name, parse_replica).

REPLICA_SUFFIX = re.compile(r"^(?P<variant>.+)-seed(?P<seed>[0-9]+)$")


@dataclass(frozen=True)
class Replica:
    """One training seed of one (pair, variant) of an experiment, and its result-folder name."""

    pair: str
    variant: str
    seed: int
    name: str


def experiment_seeds(config: Mapping[str, Any], experiment: str) -> list[int]:
    """The experiment's training seeds: its ``seeds``, or the config's one top-level ``seed``."""
    seeds = config["experiments"][experiment].get("seeds")
    return [int(seed) for seed in seeds] if seeds else [int(config["seed"])]


def replica_name(variant: str, seed: int, seeds: Sequence[int]) -> str:
    """The result-folder name of ``variant`` trained with ``seed``: the variant's own name for the
    first of ``seeds``, ``<variant>-seed<N>`` for the others."""
    return variant if seed == seeds[0] else f"{variant}-seed{seed}"


def parse_replica(name: str, seeds: Sequence[int]) -> tuple[str, int]:
    """(variant, seed) of a result-folder name made by :func:`replica_name`."""
    match = REPLICA_SUFFIX.match(name)
    if match and int(match["seed"]) in seeds[1:]:
        return match["variant"], int(match["seed"])
    return name, seeds[0]


def experiment_replicas(config: Mapping[str, Any], experiment: str) -> list[Replica]:
    """Every replica of an experiment: its systems (:func:`experiment_systems`), each once per seed,
    seed by seed within a system."""
    seeds = experiment_seeds(config, experiment)
    return [
        Replica(pair, variant, seed, replica_name(variant, seed, seeds))
        for pair, variant in experiment_systems(config["experiments"][experiment])
        for seed in seeds
    ]


def check_replica_names(name: str, experiment: Mapping[str, Any]) -> None:
    """No variant name may look like another variant's replica (``<variant>-seed<N>``)."""
    clashes = sorted(variant for variant in experiment["variants"] if REPLICA_SUFFIX.match(variant))
    if clashes:
        raise ConfigError(
            f"experiments.{name}.variants: {', '.join(clashes)} ends in -seed<N>, which names the "
            "replicas of a variant trained with further `seeds`; rename the variant"
        )


def experiment_systems(experiment: Mapping[str, Any]) -> list[tuple[str, str]]:
    """The (pair, variant) runs of an experiment, pair by pair in config order: every variant on every
    pair, except those that ``variant_pairs`` keeps to some pairs (e.g. ablations on one pair)."""
    restricted = experiment.get("variant_pairs") or {}
    return [
        (pair, variant)
        for pair in experiment["pairs"]
        for variant in experiment["variants"]
        if pair in restricted.get(variant, experiment["pairs"])
    ]


def _fill_defaults(validator_class: type) -> type:
    """A validator that also writes each schema ``default`` into the instance (as Snakemake's
    ``validate`` does), so that code outside Snakemake sees the same resolved config."""
    import jsonschema

    validate_properties = validator_class.VALIDATORS["properties"]

    def set_defaults(validator, properties, instance, schema) -> Iterator[jsonschema.ValidationError]:
        if isinstance(instance, dict):
            for name, subschema in properties.items():
                if isinstance(subschema, dict) and "default" in subschema:
                    instance.setdefault(name, copy.deepcopy(subschema["default"]))
        yield from validate_properties(validator, properties, instance, schema)

    return jsonschema.validators.extend(validator_class, {"properties": set_defaults})


def with_defaults(config: dict[str, Any], schema_path: str | Path) -> dict[str, Any]:
    """A checked copy of ``config`` with the schema's defaults filled in."""
    import jsonschema

    check_config(config, schema_path)
    resolved = copy.deepcopy(config)
    for _ in _fill_defaults(jsonschema.Draft202012Validator)(load_schema(schema_path)).iter_errors(resolved):
        pass
    return resolved


# --- content-addressed training runs -------------------------------------------------------------
#
# A training run is fully determined by its run settings: the data it reads (corpus, pair and split
# names give the paths), the model, the variant switches, the trainer settings and the seed. Two
# experiments (of the same study or of different studies) that ask for the same settings share one
# run folder, ``models/runs/<run id>/``, and so one training job. Resources (threads, GPUs, memory)
# are not settings: moving a run to other hardware neither renames nor retrains it. The settings are
# hashed as written in the config (plus the schema's defaults), not after the library fills its own
# defaults in, so that editing the library never renames a run.

ID_LENGTH = 12


def canonical_json(value: Any) -> str:
    """One text per value: sorted keys, no whitespace (the input of the run and decode ids)."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True)


def content_id(value: Any) -> str:
    """The first 12 hex digits of the sha256 of ``value``'s canonical JSON."""
    return hashlib.sha256(canonical_json(value).encode("utf-8")).hexdigest()[:ID_LENGTH]


def variant_inputs(config: dict[str, Any], experiment: str, variant: str) -> dict[str, Any]:
    """The extra inputs a variant's run reads, or {}: the streams its plug-ins declare
    (:func:`nmtvariants.models.variants.declared_inputs`) added to what ``experiments.<e>.inputs.<variant>``
    states (further sources, a feature grid, a derived corpus: choices of the study, not of a plug-in).
    Stated streams come first, so a config that still restates a plug-in's streams keeps its run."""
    from nmtvariants.models.variants import declared_inputs  # torch: only where a variant is read

    spec = config["experiments"][experiment]
    stated = dict((spec.get("inputs") or {}).get(variant) or {})
    declared = declared_inputs(spec["variants"][variant] or {})
    return with_declared_streams(stated, declared, f"experiments.{experiment}.inputs.{variant}")


def with_declared_streams(stated: dict[str, Any], declared: Mapping[str, Any], where: str) -> dict[str, Any]:
    """``stated`` inputs with every stream of ``declared`` (plug-in -> PluginInputs) added; a stream
    stated with another label count than its plug-in's (or as positions) is a ConfigError at ``where``,
    since the data would then give ``</s>`` a label the model reads as an ordinary one."""
    from nmtvariants.models.variants import stream_kind

    aux = list(stated.get("aux") or [])
    labels = dict(stated.get("aux_labels") or {})
    for plugin, streams in declared.items():
        for name in streams.aux:
            count = streams.labels.get(name)
            if (name in aux or name in labels) and labels.get(name) != count:
                raise ConfigError(
                    f"{where}: stream {name} is given as {stream_kind(labels.get(name))}, but plug-in "
                    f"{plugin} reads it as {stream_kind(count)}; drop it there (plug-ins declare their "
                    "streams)"
                )
            if name not in aux:
                aux.append(name)
            if count is not None:
                labels[name] = count
    inputs = dict(stated)
    if aux:
        inputs["aux"] = aux
    if labels:
        inputs["aux_labels"] = labels
    return inputs


def input_files(
    corpus_name: str, corpus: dict[str, Any], pair: str, inputs: dict[str, Any], split: str
) -> dict:
    """Where one split's extra inputs live, as ``nmtvariants train``/``translate`` name them.

    Every extra input of a split is a file ``data/<corpus>/<pair>/inputs/<split>.<name>`` that a
    study's rule writes line-parallel with the split's BPE source (the cleaned lines for the training
    split): integer streams (``aux``), further BPE sources (``sources``) and feature grids
    (``features``: ``<split>.<name>.npy``, one row per *raw* line of the split; the training split
    follows the cleaned lines through ``clean/train.kept``).
    """
    folder = f"data/{corpus_name}/{pair}/inputs"
    files: dict[str, Any] = {
        "aux": {name: f"{folder}/{split}.{name}" for name in inputs.get("aux", [])},
        "sources": [f"{folder}/{split}.{name}" for name in inputs.get("sources", [])],
        "features": None,
        "feature_index": None,
    }
    if inputs.get("features"):
        files["features"] = f"{folder}/{split}.{inputs['features']}.npy"
        if split == corpus["train"]:
            files["feature_index"] = f"data/{corpus_name}/{pair}/clean/train.kept"
    return files


def shared_bpe_languages(corpora: dict[str, Any]) -> dict[tuple[str, str], list[str]]:
    """(corpus, pair) -> the further languages whose training text that pair's joint BPE is also learned
    on (``corpora.<c>.preprocess.bpe.shared_with``), checked: each pair is one of the corpus's pairs and
    no further language is one of the pair's own. Their units then join the pair's network vocabulary,
    so a multi-source run reads every source language with one shared vocabulary (Libovický et al.)."""
    shared: dict[tuple[str, str], list[str]] = {}
    for name, corpus in corpora.items():
        where = f"corpora.{name}.preprocess.bpe.shared_with"
        for pair, langs in (corpus["preprocess"]["bpe"].get("shared_with") or {}).items():
            if pair not in corpus["pairs"]:
                raise ConfigError(
                    f"{where}.{pair}: not among the corpus's pairs ({', '.join(corpus['pairs'])}); "
                    "name the pair whose BPE the languages share"
                )
            own = sorted(set(langs) & set(pair.split("-")))
            if own:
                raise ConfigError(
                    f"{where}.{pair}: {', '.join(own)} is a language of the pair itself; list only further "
                    "languages"
                )
            shared[(name, pair)] = list(langs)
    return shared


def run_settings(
    config: dict[str, Any], experiment: str, pair: str, variant: str, seed: int | None = None
) -> dict[str, Any]:
    """The run config handed to `nmtvariants train`: data paths, model, variant, train settings and
    the training ``seed`` (default: the experiment's first seed; one seed of :func:`experiment_seeds`)."""
    spec = config["experiments"][experiment]
    corpus = config["corpora"][spec["corpus"]]
    src, tgt = pair.split("-")
    inputs = variant_inputs(config, experiment, variant)
    bpe = bpe_folder(spec["corpus"], pair, inputs)
    data: dict[str, Any] = {
        "train_src": f"{bpe}/{corpus['train']}.{src}",
        "train_tgt": f"{bpe}/{corpus['train']}.{tgt}",
        "valid_src": f"{bpe}/{corpus['valid']}.{src}",
        "valid_tgt": f"{bpe}/{corpus['valid']}.{tgt}",
        "vocab": f"{bpe}/vocab.txt",
    }
    inputs = {key: value for key, value in inputs.items() if key != "derived"}
    if inputs:  # only then: a variant without extra inputs keeps the baseline's settings (and run)
        for part in ("train", "valid"):
            files = input_files(spec["corpus"], corpus, pair, inputs, corpus[part])
            data[f"{part}_aux"] = files["aux"]
            data[f"{part}_sources"] = files["sources"]
            data[f"{part}_features"] = files["features"]
            data[f"{part}_feature_index"] = files["feature_index"]
        data["aux_labels"] = dict(inputs.get("aux_labels") or {})
    return {
        "data": data,
        "model": spec["model"],
        "variant": dict(spec["variants"][variant] or {}),
        "train": {
            **variant_train(spec, variant),
            "seed": experiment_seeds(config, experiment)[0] if seed is None else seed,
        },
    }


def decode_settings(config: dict[str, Any], experiment: str) -> dict[str, Any]:
    """What turns a trained run into a translation: checkpoint averaging and search settings."""
    spec = config["experiments"][experiment]
    search = {key: value for key, value in spec["evaluate"].items() if key not in ("testsets", "metrics")}
    return {"average_last": spec["average_last"], **search}


@dataclass
class TrainingRun:
    """One content-addressed run and the (experiment, pair, replica) triples that resolve to it (the
    replica is the variant's name for the experiment's first seed: :func:`replica_name`)."""

    id: str
    corpus: str
    pair: str
    settings: dict[str, Any]
    inputs: dict[str, Any] = field(default_factory=dict)
    users: list[tuple[str, str, str]] = field(default_factory=list)
    studies: list[str] = field(default_factory=list)
    resources: dict[str, int] = field(default_factory=dict)


def training_runs(config: dict[str, Any]) -> dict[str, TrainingRun]:
    """Run id -> run, for every experiment, pair, variant and seed of a resolved config (defaults
    filled in). The seed is one of the run settings, so a variant trained with three seeds is three
    runs, and a baseline two experiments share is shared seed by seed. Runs shared by several
    experiments get the largest of their resource requests."""
    runs: dict[str, TrainingRun] = {}
    for name, spec in config.get("experiments", {}).items():
        corpora = config.get("corpora", {})
        if spec["corpus"] not in corpora:
            raise ConfigError(
                f"experiments.{name}.corpus: {spec['corpus']!r} is not a configured corpus"
                f" (corpora: {', '.join(corpora) or 'none'}); add it under `corpora:` or fix the name"
            )
        missing = [pair for pair in spec["pairs"] if pair not in corpora[spec["corpus"]]["pairs"]]
        if missing:
            raise ConfigError(
                f"experiments.{name}.pairs: {', '.join(missing)} not among the pairs of corpus"
                f" {spec['corpus']} ({', '.join(corpora[spec['corpus']]['pairs'])})"
            )
        check_variant_pairs(name, spec)
        check_variant_train(name, spec)
        for replica in experiment_replicas(config, name):
            pair, variant = replica.pair, replica.variant
            settings = run_settings(config, name, pair, variant, replica.seed)
            run = runs.setdefault(
                content_id(settings),
                TrainingRun(
                    content_id(settings),
                    spec["corpus"],
                    pair,
                    settings,
                    variant_inputs(config, name, variant),
                ),
            )
            run.users.append((name, pair, replica.name))
            if spec["study"] not in run.studies:
                run.studies.append(spec["study"])
            for key, value in spec["resources"].items():
                run.resources[key] = max(run.resources.get(key, value), value)
    return runs


def run_index(runs: Mapping[str, TrainingRun]) -> dict[tuple[str, str, str], str]:
    """(experiment, pair, replica) -> run id of :func:`training_runs`: which shared run each replica
    reads (rules/common.smk's RUN_OF, handed to every study's planner)."""
    return {user: run.id for run in runs.values() for user in run.users}


def check_streams_made(
    config: dict[str, Any], runs: Mapping[str, TrainingRun], made: Callable[[str], bool]
) -> None:
    """Stop at start-up when a run reads a stream that no rule writes, naming the experiment, the
    variant, the plug-in (or config key) that wants it and what writes it. Since plug-ins declare their
    streams, a run always asks for them; what can be missing is the rule (a user plug-in's new stream,
    a workflow without the study's rules), and Snakemake would only say which file it lacks.
    ``made(path)``: whether a rule's output matches ``path`` (the Snakefile passes Snakemake's own test)."""
    for run in runs.values():
        for part in ("train_aux", "valid_aux"):
            for stream, path in (run.settings["data"].get(part) or {}).items():
                if not made(path):
                    raise ConfigError(unmade_stream_message(config, run, stream, path))


def unmade_stream_message(config: dict[str, Any], run: TrainingRun, stream: str, path: str) -> str:
    """One line: who reads ``stream`` in the first experiment of ``run``, and that nothing makes ``path``."""
    from nmtvariants.models.variants import declared_inputs

    experiment, _, replica = run.users[0]
    variant, _ = parse_replica(replica, experiment_seeds(config, experiment))
    readers = [
        (plugin, streams.made_by)
        for plugin, streams in declared_inputs(run.settings["variant"]).items()
        if stream in streams.aux
    ]
    if not readers:
        return (
            f"experiments.{experiment}.inputs.{variant}: the stream {stream} has no rule that writes {path}; "
            "add one to the study's rules or drop the stream"
        )
    plugin, made_by = readers[0]
    return (
        f"experiments.{experiment}.variants.{variant}: plug-in {plugin} reads the stream {stream}, but no "
        f"rule makes {path} (written by {made_by}); include that rule or drop the plug-in"
    )
