"""Yang et al.'s (2020) decoder modules TEM, SEM, IFM as capture names, for every decoder layout.

The paper splits each post-norm decoder layer by function (§2.2, seed brief §3.2): TEM exploits the
target history, SEM the source, IFM fuses the two. The capture hook (:mod:`nmtvariants.models.hooks`)
records per sub-layer ``.out`` (its function's output, after W_O / the second Linear, before dropout
and residual) and ``.state`` (after the residual and, in post-norm, the LayerNorm). This module says
which recorded tensor is which module, so that probes and alignment read the same thing everywhere.

With x the layer input (previous IFM, or the embeddings for layer 0) and post-norm sub-layers
``state = LN(input + out)``; ``{n}`` is the 0-based layer index:

=============  ==============================  ==============================  ==============================
module         ``standard`` self,cross,ffn     ``sem_ifm`` cross,ffn           ``simplified`` self,cross
=============  ==============================  ==============================  ==============================
TEM            ``self.state`` LN(x+SA(x))      (none: no self-attention)       ``self.state``
SEM            ``cross.out`` EA(TEM)           ``cross.out`` EA(x)             ``cross.out`` EA(TEM)
SEM weights    ``cross.weights``               ``cross.weights``               ``cross.weights``
Add-NormI      ``cross.state`` LN(TEM+SEM)     ``cross.state`` LN(x+SEM)       ``cross.state`` LN(TEM+SEM)
FF             ``ffn.out`` FFN(Add-NormI)      ``ffn.out``                     (none)
Add-Norm       ``ffn.state`` LN(Add-NormI+FF)  ``ffn.state``                   (none)
IFM            layer output = Add-Norm         layer output = Add-Norm         layer output = Add-NormI
=============  ==============================  ==============================  ==============================

(names are under ``decoder.layers.{n}.``; "layer output" is ``decoder.layers.{n}`` itself.)

``sem_tem_ifm`` (cross,self,ffn, the re-ordered decoder) mirrors the standard split with the two
attentions swapped (seed brief §3.5, suggested): the *first* module keeps its own Add&Norm and the
*second* is its attention output alone, whose Add&Norm starts the fusion as in the paper:

* SEM = ``cross.state`` = LN(x + EA(x)); SEM weights = ``cross.weights``;
* TEM = ``self.out`` = SA(SEM);
* Add-NormI = ``self.state`` = LN(SEM + TEM); FF = ``ffn.out``; Add-Norm = IFM = ``ffn.state``.

The general rule, applied to any layout that puts the FFN (if any) last: the first of two attention
sub-layers is read at ``.state``, the last attention at ``.out``, Add-NormI is the last attention's
``.state``, FF and Add-Norm the FFN's ``.out``/``.state``, IFM the layer output. Under pre-norm the
same names hold the un-normalised residual sums (``x + out``); the study runs post-norm (see
:data:`nmtvariants.models.config.STUDY_OVERRIDES`).
"""

from __future__ import annotations

from nmtvariants.errors import ConfigError
from nmtvariants.models.variants import decoder_layout

MODULE_OF_KIND = {"self": "TEM", "cross": "SEM"}
MODULES = ("TEM", "SEM", "SEM weights", "Add-NormI", "FF", "Add-Norm", "IFM")


def decoder_module_names(layout: str, layer: int) -> dict[str, str]:
    """Capture name of each of Yang et al.'s modules present in ``layer`` (0-based) of ``layout``.

    ``layout``: a layout name (``standard``, ``sem_ifm``, ``sem_tem_ifm``, ``simplified``) or a
    sub-layer list such as ``"cross,self,ffn"``. Keys are from :data:`MODULES`; a module the layout
    does not have (TEM in ``sem_ifm``; FF and Add-Norm in ``simplified``) is absent. Raises
    ConfigError for a layout the split does not describe (an FFN before an attention, no attention).
    """
    if layer < 0:
        raise ConfigError(f"decoder layer index must be >= 0, got {layer}")
    kinds = decoder_layout({"decoder_layout": layout})
    attentions = [kind for kind in kinds if kind in MODULE_OF_KIND]
    if not attentions or ("ffn" in kinds and kinds[-1] != "ffn"):
        raise ConfigError(
            f"decoder layout {layout!r}: the TEM/SEM/IFM split needs one or two attention sub-layers "
            "followed by at most an FFN"
        )
    prefix = f"decoder.layers.{layer}"
    names: dict[str, str] = {}
    first, last = attentions[0], attentions[-1]
    if len(attentions) == 2:
        names[MODULE_OF_KIND[first]] = f"{prefix}.{first}.state"
    names[MODULE_OF_KIND[last]] = f"{prefix}.{last}.out"
    if "cross" in kinds:
        names["SEM weights"] = f"{prefix}.cross.weights"
    names["Add-NormI"] = f"{prefix}.{last}.state"
    if "ffn" in kinds:
        names["FF"] = f"{prefix}.ffn.out"
        names["Add-Norm"] = f"{prefix}.ffn.state"
    names["IFM"] = prefix
    return {module: names[module] for module in MODULES if module in names}
