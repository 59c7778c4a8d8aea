"""Model configuration: one dataclass, four presets, and the variant switches.

A configuration is stored inside every checkpoint (``dataclasses.asdict(cfg)``), so that a model can be
rebuilt for decoding without the experiment config. The core fields describe the shared Transformer;
``variant`` is a free-form dict of study-specific switches (decoder layout, multi-source combination,
and plug-ins such as lexical shortcuts or PASCAL) that :mod:`nmtvariants.models.variants` validates.

Defaults follow Emelin et al.'s code (§1.1 of the seed brief): pre-norm with a final LayerNorm per stack,
bias-free attention projections, biased FFN, tied embeddings over a joint vocabulary, T2T sinusoids,
embeddings scaled by sqrt(d), Glorot-uniform initialisation, LayerNorm eps 1e-5.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from nmtvariants.errors import ConfigError

NORMS = ("pre", "post")
SHARE = ("all", "decoder", "none")
RELU_DROPOUT_AT = ("hidden", "input")


@dataclass
class ModelConfig:
    """Everything needed to rebuild a Transformer (apart from the vocabulary size)."""

    d_model: int = 512
    n_heads: int = 8
    d_ff: int = 2048
    encoder_layers: int = 6
    decoder_layers: int = 6
    # dropout, separately for each place the papers distinguish
    embedding_dropout: float = 0.1
    residual_dropout: float = 0.1
    attention_dropout: float = 0.1
    relu_dropout: float = 0.1
    # "hidden": dropout on the ReLU activations (Vaswani/fairseq); "input": on the FFN input (Emelin's code)
    relu_dropout_at: str = "hidden"
    norm: str = "pre"
    # a LayerNorm after the last layer of each stack (only meaningful with pre-norm)
    final_norm: bool = True
    layer_norm_eps: float = 1e-5
    attention_bias: bool = False
    ffn_bias: bool = True
    # "all": source, target and output share one table; "decoder": target=output, own source table
    share_embeddings: str = "all"
    scale_embeddings: bool = True
    max_positions: int = 1024
    variant: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.validate()

    def validate(self) -> None:
        def bad(key: str, message: str) -> ConfigError:
            return ConfigError(f"model.{key}: {message}")

        if self.d_model <= 0 or self.n_heads <= 0 or self.d_model % self.n_heads:
            raise bad(
                "n_heads", f"d_model {self.d_model} must be a positive multiple of n_heads {self.n_heads}"
            )
        if self.d_model % 2:
            raise bad("d_model", "must be even (sinusoidal positions use sin and cos halves)")
        for key in ("d_ff", "max_positions"):
            if getattr(self, key) <= 0:
                raise bad(key, "must be positive")
        for key in ("encoder_layers", "decoder_layers"):
            if getattr(self, key) < 0:
                raise bad(key, "must be >= 0")
        for key in ("embedding_dropout", "residual_dropout", "attention_dropout", "relu_dropout"):
            if not 0.0 <= getattr(self, key) < 1.0:
                raise bad(key, f"must be in [0, 1), got {getattr(self, key)}")
        if self.norm not in NORMS:
            raise bad("norm", f"must be one of {NORMS}, got {self.norm!r}")
        if self.share_embeddings not in SHARE:
            raise bad("share_embeddings", f"must be one of {SHARE}, got {self.share_embeddings!r}")
        if self.relu_dropout_at not in RELU_DROPOUT_AT:
            raise bad("relu_dropout_at", f"must be one of {RELU_DROPOUT_AT}, got {self.relu_dropout_at!r}")
        if not isinstance(self.variant, dict):
            raise bad("variant", "must be a mapping")

    @property
    def d_head(self) -> int:
        return self.d_model // self.n_heads

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ModelConfig:
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ConfigError(
                f"model: unknown key(s) {', '.join(unknown)}; known keys: {', '.join(sorted(known))}"
            )
        return cls(**{**data, "variant": dict(data.get("variant") or {})})


# Presets. tiny: toy runs and tests; small: Emelin's Transformer-SMALL and the peers' CPU benchmark
# config (3+3, d 256, 4 heads, FFN 1024); base/big: Vaswani et al. (big: embedding dropout 0.3 as in
# Emelin's --embiggen_model, other dropouts 0.1).
PRESETS: dict[str, dict[str, Any]] = {
    "tiny": dict(d_model=64, n_heads=4, d_ff=256, encoder_layers=2, decoder_layers=2),
    "small": dict(d_model=256, n_heads=4, d_ff=1024, encoder_layers=3, decoder_layers=3),
    "base": dict(d_model=512, n_heads=8, d_ff=2048, encoder_layers=6, decoder_layers=6),
    "big": dict(
        d_model=1024, n_heads=16, d_ff=4096, encoder_layers=6, decoder_layers=6, embedding_dropout=0.3
    ),
}
ALIASES = {f"transformer_{name}": name for name in PRESETS}

# Core-field overrides that make a preset follow one study's toolkit; they combine with the size preset
# (``model_config("tiny", study_overrides("yang2020", "tiny"))``, or listed beside ``preset:`` in a
# YAML) and leave the defaults the other studies use untouched.
#
# yang2020: Yang et al. (2020) trained FairSeq's Transformer-Base and -Big (seed brief §3.1), i.e.
# fairseq's ``transformer_wmt_en_de`` / ``transformer_vaswani_wmt_en_de_big``: post-norm Add&Norm after
# every sub-layer (the TEM/SEM/IFM split of analysis/decoder_modules.py is defined on it) and no
# LayerNorm after the last layer (fairseq adds one only with normalize_before; our final_norm applies
# to pre-norm only, False says so); biased Q/K/V/O projections and FFN (fairseq's Linear default);
# attention and ReLU dropout 0.0 (fairseq's base_architecture); residual and embedding dropout from
# the preset (0.1) except big, where Vaswani et al.'s EN-DE big setting (fairseq's big arch) uses 0.3
# for both. Kept from our defaults: embeddings scaled by sqrt(d), sinusoidal positions, LayerNorm eps
# 1e-5, one embedding table for source, target and output (the paper's joint 40k BPE allows it; the
# paper does not say) and Glorot-uniform weights (fairseq draws embeddings from N(0, d^-1/2)).
STUDY_OVERRIDES: dict[str, dict[str, Any]] = {
    "yang2020": dict(
        norm="post",
        final_norm=False,
        attention_bias=True,
        ffn_bias=True,
        attention_dropout=0.0,
        relu_dropout=0.0,
        relu_dropout_at="hidden",
    ),
}
STUDY_PRESET_OVERRIDES: dict[tuple[str, str], dict[str, Any]] = {
    ("yang2020", "big"): dict(residual_dropout=0.3, embedding_dropout=0.3),
}


def study_overrides(study: str, preset: str = "base") -> dict[str, Any]:
    """The core-field overrides of ``study`` for the size ``preset`` (see :data:`STUDY_OVERRIDES`)."""
    if study not in STUDY_OVERRIDES:
        raise ConfigError(f"no model overrides for study {study!r}; known: {', '.join(STUDY_OVERRIDES)}")
    name = ALIASES.get(preset, preset)
    if name not in PRESETS:
        raise ConfigError(f"model.preset: unknown preset {preset!r}; choose one of {', '.join(PRESETS)}")
    return {**STUDY_OVERRIDES[study], **STUDY_PRESET_OVERRIDES.get((study, name), {})}


def model_config(
    preset: str = "base",
    overrides: dict[str, Any] | None = None,
    variant: dict[str, Any] | None = None,
) -> ModelConfig:
    """A preset, with ``overrides`` of core fields and the study ``variant`` switches on top."""
    name = ALIASES.get(preset, preset)
    if name not in PRESETS:
        raise ConfigError(f"model.preset: unknown preset {preset!r}; choose one of {', '.join(PRESETS)}")
    values: dict[str, Any] = dict(PRESETS[name])
    overrides = dict(overrides or {})
    if "variant" in overrides:
        raise ConfigError("model: pass variant switches through `variant`, not `overrides`")
    known = {f.name for f in dataclasses.fields(ModelConfig)}
    unknown = sorted(set(overrides) - known)
    if unknown:
        raise ConfigError(
            f"model: unknown override(s) {', '.join(unknown)}; known keys: {', '.join(sorted(known))}"
        )
    values.update(overrides)
    values["variant"] = dict(variant or {})
    return ModelConfig(**values)
