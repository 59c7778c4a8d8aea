"""The ``variant`` switches: core ones handled here, study plug-ins registered by their own modules.

Core switches (built into the layers):

* ``decoder_layout``: order of decoder sub-layers, e.g. ``"self,cross,ffn"`` (default), ``"cross,ffn"``
  (SEM->IFM), ``"cross,self,ffn"`` (SEM->TEM->IFM), ``"self,cross"`` (simplified decoder); the names
  ``standard``, ``sem_ifm``, ``sem_tem_ifm``, ``simplified`` are accepted too.
* ``multi_source``: ``{strategy: serial, sources: N, share_encoders, encoder_layers, features}``: N text
  encoders (own or shared parameters, own depth) and an optional feature encoder, one memory each
  (:class:`MultiSource`). Only ``serial`` is built into the core; other strategies are plug-ins
  registered with :func:`declare_strategy`, which also declares their own option keys.

Plug-ins: any other top-level key names a plug-in registered with :func:`declare_variant` by a package
of ``nmtvariants.plugins`` (all of them are imported by :func:`load_plugins`; each names its installer
by reference, ``"package.modules:function"``, imported only when a model is built, so that checking a
config never imports torch and this module does not either), or with the :func:`register_variant`
decorator by a user plug-in file outside the package: every ``.py`` file named in the environment variable
``NMTV_PLUGINS`` (paths separated by ``os.pathsep``; fairseq's ``--user-dir`` idea) is imported too,
so that a subprocess (``nmtvariants train``, ``translate``, ``score``) sees the same plug-ins as the
process that started it. After the
base model is built, each plug-in receives the model and its options and installs its modules into the
seams (``attn.kv_transform``, ``attn.score_transform``, ``SubLayer.residual_from_normed``, extra
parameters). Because installation happens in ``build_model``, the parameters are part of the model and
``load_model`` rebuilds the same structure from the stored config. Plug-ins are installed in sorted key
order, so that a composed variant (e.g. PASCAL + shortcuts + simplified decoder) always builds the same way.

A plug-in that reads source-aligned integer streams (parents, dependency labels) declares them where it
is registered (``declare_variant(name, installer, inputs=PluginInputs(...))``); a run's data settings follow from
that declaration (:func:`declared_inputs`, used by :func:`nmtvariants.config.variant_inputs`), so that
no config restates what a plug-in needs and a run without them stops at start-up. The multi-source
strategies declare nothing: their further sources and feature grid are named by the study's config
(which languages, which image features), not by the strategy.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import os
import pkgutil
import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from nmtvariants.errors import ConfigError

if TYPE_CHECKING:
    from torch import nn

    from nmtvariants.models.transformer import Transformer

Installer = Callable[["Transformer", Any], None]
# A registered installer: the function, or where to import it from ("package.module:function"). The
# built-in plug-ins register the latter from torch-free declarations, so that checking and planning a
# config (the Snakefile does both) never imports torch; the function is imported when a model is built.
InstallerRef = Installer | str

SUBLAYER_KINDS = ("self", "cross", "ffn")

LAYOUT_NAMES = {
    "standard": "self,cross,ffn",
    "sem_ifm": "cross,ffn",
    "sem_tem_ifm": "cross,self,ffn",
    "simplified": "self,cross",
}
CORE_KEYS = ("decoder_layout", "multi_source")
PLUGIN_PACKAGE = "nmtvariants.plugins"
PLUGINS: dict[str, InstallerRef] = {}


@dataclass(frozen=True)
class PluginInputs:
    """The source-aligned integer streams a plug-in reads (``data/<corpus>/<pair>/inputs/<split>.<name>``
    in the workflow, ``data.train_aux`` / ``valid_aux`` in a run config).

    ``aux``: the stream names; ``labels``: those of them that hold label ids rather than positions, with
    the label count (``data.aux_labels``: ``</s>`` gets the count); ``made_by``: what writes them, for
    the start-up error of a run that lacks them.
    """

    aux: tuple[str, ...] = ()
    labels: Mapping[str, int] = field(default_factory=dict)
    made_by: str = "a study's rule"


Options = TypeVar("Options")


def plugin_options(cls: type[Options], raw: Any, key: str, example: str) -> Options:
    """A plug-in's options dataclass ``cls`` from its config value ``raw`` (None: the defaults): a value
    that is not a mapping, or a key the dataclass lacks, is a ConfigError naming ``key`` (e.g.
    ``model.variant.pascal``); ``example``: a mapping to show, ``{layer: 1}``. The values are the
    plug-in's to check."""
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise ConfigError(f"{key}: expected a mapping like {example}, got {raw!r}")
    known = [f.name for f in fields(cls)]
    unknown = sorted(set(raw) - set(known))
    if unknown:
        raise ConfigError(f"{key}: unknown option(s) {', '.join(unknown)}; known: {', '.join(known)}")
    return cls(**raw)


def is_int(value: Any) -> bool:
    """An integer option (YAML's ``true`` is a bool, which Python counts as an int: not here)."""
    return isinstance(value, int) and not isinstance(value, bool)


def is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def stream_kind(labels: int | None) -> str:
    """How a stream is read, for messages: ``positions``, or ``<L> labels`` for a label stream."""
    return "positions" if labels is None else f"{labels} labels"


# A plug-in's declaration: fixed, or computed from its options (a label count that is an option).
InputsDeclaration = PluginInputs | Callable[[Any], PluginInputs]
PLUGIN_INPUTS: dict[str, InputsDeclaration] = {}


def declare_variant(name: str, installer: InstallerRef, inputs: InputsDeclaration | None = None) -> None:
    """Register plug-in ``name``: its ``installer`` (a function, or ``"package.module:function"`` to
    import when a model is built) and the streams it reads, if any (``inputs``)."""
    if name in CORE_KEYS:
        raise ValueError(f"{name!r} is a core variant switch")
    PLUGINS[name] = installer
    PLUGIN_INPUTS.pop(name, None)
    if inputs is not None:
        PLUGIN_INPUTS[name] = inputs


def register_variant(name: str, inputs: InputsDeclaration | None = None) -> Callable[[Installer], Installer]:
    """Decorator: ``@register_variant("pascal", inputs=PluginInputs(aux=("parents_x2",)))
    def install(model, options): ...``; ``inputs``: the streams the plug-in reads, if any."""

    def decorate(installer: Installer) -> Installer:
        declare_variant(name, installer, inputs)
        return installer

    return decorate


def plugin_installer(name: str) -> Installer:
    """The installer of plug-in ``name``, imported on first use when it was declared by reference."""
    found = PLUGINS[name]
    if isinstance(found, str):
        module, _, function = found.partition(":")
        found = PLUGINS[name] = getattr(importlib.import_module(module), function)
    return found


def unregister_variant(name: str) -> None:
    PLUGINS.pop(name, None)
    PLUGIN_INPUTS.pop(name, None)


def declared_inputs(variant: Mapping[str, Any]) -> dict[str, PluginInputs]:
    """Plug-in key -> the streams it reads with its options, for each plug-in of ``variant`` that
    declares any, in installation order. Unknown keys are :func:`check_variant`'s to report."""
    load_plugins()
    declared = {}
    for key in sorted(variant):
        declaration = PLUGIN_INPUTS.get(key)
        if declaration is not None:
            declared[key] = declaration(variant[key]) if callable(declaration) else declaration
    return declared


PLUGIN_PATH_VARIABLE = "NMTV_PLUGINS"


def load_plugins() -> None:
    """Import every module of the plug-in package, then every user plug-in file named in
    ``$NMTV_PLUGINS`` (each registers its variants on import; each file is imported once)."""
    package = importlib.import_module(PLUGIN_PACKAGE)
    for module in pkgutil.iter_modules(package.__path__):
        importlib.import_module(f"{PLUGIN_PACKAGE}.{module.name}")
    for entry in os.environ.get(PLUGIN_PATH_VARIABLE, "").split(os.pathsep):
        if entry:
            _import_file(Path(entry))


def add_plugin_files(paths: Iterable[str | Path]) -> None:
    """Add ``paths`` (made absolute) to this process's ``$NMTV_PLUGINS``: the workflow does so for the
    config's ``extensions``, so that its start-up check and every job it starts (train, translate,
    score, on any working directory) import the plug-ins of a study that lives outside the package."""
    entries = [entry for entry in os.environ.get(PLUGIN_PATH_VARIABLE, "").split(os.pathsep) if entry]
    entries += [str(Path(path).resolve()) for path in paths]
    if entries:
        os.environ[PLUGIN_PATH_VARIABLE] = os.pathsep.join(dict.fromkeys(entries))


def _import_file(path: Path) -> None:
    path = path.resolve()
    name = f"nmtv_user_plugin_{hashlib.sha1(str(path).encode()).hexdigest()[:12]}_{path.stem}"
    if name in sys.modules:
        return
    if not path.is_file() or path.suffix != ".py":
        raise ConfigError(f"{PLUGIN_PATH_VARIABLE}: {path} is not a .py file; list plug-in files")
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise


def init_plugin_parameters(module: nn.Module) -> None:
    """Initialise a plug-in's new modules as ``Transformer.reset_parameters`` does the base model's.

    Installers run after the base model is initialised, so a plug-in's parameters would otherwise
    keep PyTorch's per-layer defaults (Kaiming-uniform), not the Glorot rule of the studies.
    """
    from torch import nn  # here, not at the top: checking a variant must not import torch

    for sub in module.modules():
        if isinstance(sub, nn.Linear):
            nn.init.xavier_uniform_(sub.weight)
            if sub.bias is not None:
                nn.init.zeros_(sub.bias)
        elif isinstance(sub, nn.Embedding):
            nn.init.xavier_uniform_(sub.weight)
        elif isinstance(sub, nn.LayerNorm):
            nn.init.ones_(sub.weight)
            nn.init.zeros_(sub.bias)


def parse_layout(layout: str) -> tuple[str, ...]:
    """``"self, cross,ffn"`` -> ``("self", "cross", "ffn")`` (kinds not yet checked)."""
    return tuple(part.strip() for part in layout.split(",") if part.strip())


def decoder_layout(variant: dict[str, Any]) -> tuple[str, ...]:
    raw = variant.get("decoder_layout", "standard")
    if not isinstance(raw, str):
        raise ConfigError(
            f"model.variant.decoder_layout: expected a string like 'self,cross,ffn', got {raw!r}"
        )
    kinds = parse_layout(LAYOUT_NAMES.get(raw, raw))
    unknown = [kind for kind in kinds if kind not in SUBLAYER_KINDS]
    if unknown or not kinds or len(set(kinds)) != len(kinds):
        raise ConfigError(
            f"model.variant.decoder_layout: {raw!r} must list each of "
            f"{', '.join(SUBLAYER_KINDS)} at most once "
            f"(or be one of {', '.join(LAYOUT_NAMES)})"
        )
    return kinds


# The multi_source keys the core reads; a strategy plug-in declares its own with register_strategy.
MULTI_SOURCE_KEYS = ("strategy", "sources", "share_encoders", "encoder_layers", "features")
STRATEGY_KEYS: dict[str, tuple[str, ...]] = {"serial": ()}


def declare_strategy(name: str, installer: InstallerRef, keys: tuple[str, ...] = ()) -> None:
    """Register multi-source combination ``name``: its installer (a function, or
    ``"package.module:function"``), registered as the plug-in ``multi_source.<name>`` and called with
    the model and the whole ``multi_source`` mapping after the base model is built with ``serial``
    cross-attention blocks holding one attention per memory; and the strategy's own option ``keys``:
    the config check accepts them beside the core keys (MULTI_SOURCE_KEYS) and rejects any other. The
    installer validates their values (ConfigError naming ``model.variant.multi_source.<key>``)."""
    _check_strategy_keys(name, keys)
    STRATEGY_KEYS[name] = tuple(keys)
    declare_variant(f"multi_source.{name}", installer)


def _check_strategy_keys(name: str, keys: tuple[str, ...]) -> None:
    clash = sorted(set(keys) & set(MULTI_SOURCE_KEYS))
    if clash:
        raise ValueError(f"multi_source strategy {name!r}: {', '.join(clash)} are core keys")


def register_strategy(name: str, keys: tuple[str, ...] = ()) -> Callable[[Installer], Installer]:
    """Decorator for a multi-source combination: ``@register_strategy("parallel", keys=("heads",))``
    (:func:`declare_strategy`)."""
    _check_strategy_keys(name, keys)

    def decorate(installer: Installer) -> Installer:
        declare_strategy(name, installer, keys)
        return installer

    return decorate


@dataclass(frozen=True)
class MultiSource:
    """The parsed ``multi_source`` switch: which encoders exist and how the decoder combines them.

    ``encoder_layers``: depth of each text encoder (source order); ``feature_channels``: C of the
    feature grid [B, R, C] when there is a feature encoder (its memory comes after the text ones);
    ``feature_layer_norm``: a LayerNorm after the feature projection (ours, not the paper's; off by
    default, models/encoders.py); ``options``: the strategy's own keys.
    """

    strategy: str = "serial"
    sources: int = 1
    share_encoders: bool = False
    encoder_layers: tuple[int, ...] = ()
    feature_channels: int | None = None
    feature_layer_norm: bool = False
    options: dict[str, Any] = field(default_factory=dict)

    @property
    def memories(self) -> int:
        return self.sources + (self.feature_channels is not None)


def multi_source(variant: dict[str, Any], default_layers: int = 6) -> MultiSource:
    """Parse and check ``variant.multi_source``; ``default_layers``: the model's ``encoder_layers``.

    ``{strategy: serial, sources: N, share_encoders: false, encoder_layers: [6, 2],
    features: {channels: C, layer_norm: false}, <the strategy's own keys>}``. ``encoder_layers`` (an
    int or one int per source) overrides the model's depth for the text encoders; shared encoders have
    one depth.
    """
    key = "model.variant.multi_source"
    options = variant.get("multi_source") or {}
    if not isinstance(options, dict):
        raise ConfigError(f"{key}: expected a mapping {{strategy: ..., sources: N}}")
    strategy = options.get("strategy", "serial")
    if strategy != "serial":
        load_plugins()
        if f"multi_source.{strategy}" not in PLUGINS:
            raise ConfigError(
                f"{key}.strategy: {strategy!r} is not available (built in: serial; "
                f"registered: {', '.join(k for k in PLUGINS if k.startswith('multi_source.')) or 'none'})"
            )
    own = STRATEGY_KEYS.get(strategy, ())
    unknown = sorted(set(options) - set(MULTI_SOURCE_KEYS) - set(own))
    if unknown:
        raise ConfigError(
            f"{key}: unknown key(s) {', '.join(unknown)} for strategy {strategy!r}; "
            f"known: {', '.join([*MULTI_SOURCE_KEYS, *own])}"
        )
    sources = options.get("sources", 1)
    if not isinstance(sources, int) or isinstance(sources, bool) or sources < 1:
        raise ConfigError(f"{key}.sources: must be a positive integer, got {sources!r}")
    share = options.get("share_encoders", False)
    if not isinstance(share, bool):
        raise ConfigError(f"{key}.share_encoders: must be true or false, got {share!r}")
    layers = options.get("encoder_layers", default_layers)
    depths = [layers] * sources if isinstance(layers, int) else layers
    if (
        not isinstance(depths, list)
        or len(depths) != sources
        or not all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in depths)
    ):
        raise ConfigError(
            f"{key}.encoder_layers: give one depth (int >= 0) or a list of {sources} depths, got {layers!r}"
        )
    if share and len(set(depths)) > 1:
        raise ConfigError(f"{key}.encoder_layers: shared encoders have one depth, got {layers!r}")
    features = options.get("features")
    channels, layer_norm = None, False
    if features is not None:
        channels = features.get("channels") if isinstance(features, dict) else None
        layer_norm = features.get("layer_norm", False) if isinstance(features, dict) else False
        if (
            not isinstance(features, dict)
            or "channels" not in features
            or not set(features) <= {"channels", "layer_norm"}
            or not isinstance(channels, int)
            or isinstance(channels, bool)
            or channels < 1
            or not isinstance(layer_norm, bool)
        ):
            raise ConfigError(
                f"{key}.features: expected {{channels: C}} with C the feature grid's positive channel "
                f"count (and optionally layer_norm: true, a LayerNorm after the projection that the "
                f"paper does not have), got {features!r}"
            )
    return MultiSource(
        strategy=strategy,
        sources=sources,
        share_encoders=share,
        encoder_layers=tuple(depths),
        feature_channels=channels,
        feature_layer_norm=layer_norm,
        options={k: v for k, v in options.items() if k in own},
    )


def check_variant(variant: dict[str, Any]) -> None:
    """Raise ConfigError for unknown switches before anything is built."""
    decoder_layout(variant)
    multi_source(variant)
    load_plugins()
    unknown = sorted(key for key in variant if key not in CORE_KEYS and key not in PLUGINS)
    if unknown:
        raise ConfigError(
            f"model.variant: unknown switch(es) {', '.join(unknown)}; available: "
            f"{', '.join([*CORE_KEYS, *sorted(PLUGINS)])}"
        )


def install_variants(model: Transformer, variant: dict[str, Any]) -> None:
    check_variant(variant)
    strategy = multi_source(variant).strategy
    if strategy != "serial":
        plugin_installer(f"multi_source.{strategy}")(model, variant["multi_source"])
    for key in sorted(variant):
        if key not in CORE_KEYS:
            plugin_installer(key)(model, variant[key])
