"""The ``variant`` switches: core ones handled here, study plug-ins registered by their own modules.

Core switches (built into the layers):

* ``decoder_layout``: order of decoder sub-layers, e.g. ``"self,cross,ffn"`` (default), ``"cross,ffn"``
  (SEM->IFM), ``"cross,self,ffn"`` (SEM->TEM->IFM), ``"self,cross"`` (simplified decoder); the names
  ``standard``, ``sem_ifm``, ``sem_tem_ifm``, ``simplified`` are accepted too.
* ``multi_source``: ``{strategy: serial, sources: N}``; N memories for cross-attention. Only ``serial``
  is built into the core; other strategies are plug-ins registered under ``multi_source.<strategy>``.

Plug-ins: any other top-level key names a plug-in registered with :func:`register_variant` by a module
of the ``nmtvariants.plugins`` package (all of them are imported by :func:`load_plugins`), or by a
user plug-in file outside the package: every ``.py`` file named in the environment variable
``NMTV_PLUGINS`` (paths separated by ``os.pathsep``; fairseq's ``--user-dir`` idea) is imported too,
so that a subprocess (``nmtvariants train``, ``translate``, ``score``) sees the same plug-ins as the
process that started it. After the
base model is built, each plug-in receives the model and its options and installs its modules into the
seams (``attn.kv_transform``, ``attn.score_transform``, ``SubLayer.residual_from_normed``, extra
parameters). Because installation happens in ``build_model``, the parameters are part of the model and
``load_model`` rebuilds the same structure from the stored config. Plug-ins are installed in sorted key
order, so that a composed variant (e.g. PASCAL + shortcuts + simplified decoder) always builds the same way.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import os
import pkgutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from torch import nn

from nmtvariants.errors import ConfigError
from nmtvariants.models.layers import SUBLAYER_KINDS, parse_layout

if TYPE_CHECKING:
    from nmtvariants.models.transformer import Transformer

Installer = Callable[["Transformer", Any], None]

LAYOUT_NAMES = {
    "standard": "self,cross,ffn",
    "sem_ifm": "cross,ffn",
    "sem_tem_ifm": "cross,self,ffn",
    "simplified": "self,cross",
}
CORE_KEYS = ("decoder_layout", "multi_source")
PLUGIN_PACKAGE = "nmtvariants.plugins"
PLUGINS: dict[str, Installer] = {}


def register_variant(name: str) -> Callable[[Installer], Installer]:
    """Decorator: ``@register_variant("pascal") def install(model, options): ...``."""

    def decorate(installer: Installer) -> Installer:
        if name in CORE_KEYS:
            raise ValueError(f"{name!r} is a core variant switch")
        PLUGINS[name] = installer
        return installer

    return decorate


def unregister_variant(name: str) -> None:
    PLUGINS.pop(name, None)


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


def multi_source(variant: dict[str, Any]) -> tuple[str, int]:
    options = variant.get("multi_source") or {}
    if not isinstance(options, dict):
        raise ConfigError("model.variant.multi_source: expected a mapping {strategy: ..., sources: N}")
    unknown = sorted(set(options) - {"strategy", "sources"})
    if unknown:
        raise ConfigError(f"model.variant.multi_source: unknown key(s) {', '.join(unknown)}")
    strategy = options.get("strategy", "serial")
    sources = options.get("sources", 1)
    if not isinstance(sources, int) or sources < 1:
        raise ConfigError(f"model.variant.multi_source.sources: must be a positive integer, got {sources!r}")
    if strategy != "serial":
        load_plugins()
        if f"multi_source.{strategy}" not in PLUGINS:
            raise ConfigError(
                f"model.variant.multi_source.strategy: {strategy!r} is not available (built in: serial; "
                f"registered: {', '.join(k for k in PLUGINS if k.startswith('multi_source.')) or 'none'})"
            )
    return strategy, sources


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
    strategy, _ = multi_source(variant)
    if strategy != "serial":
        PLUGINS[f"multi_source.{strategy}"](model, variant["multi_source"])
    for key in sorted(variant):
        if key not in CORE_KEYS:
            PLUGINS[key](model, variant[key])
