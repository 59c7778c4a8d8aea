"""Train a Stanza tagger and dependency parser offline on a UD treebank, for :mod:`stanza_parse`.

Stanza's pretrained models live on a hub that the offline machines cannot reach, so the pipeline
trains its own with Stanza's entry points (``python -m stanza.models.tagger`` / ``.parser``) and
``--no_pretrain`` (no word vectors, no character language model: neither can be downloaded). The
models land in ``model_dir`` as ``<lang>_tagger.pt`` and ``<lang>_parser.pt``, the names the parse
step looks for, next to Stanza's logs (``<lang>_tagger.log``, ``<lang>_parser.log``). Each model is
trained in a scratch directory inside ``model_dir`` and moved into place only when its run
succeeded, so an interrupted run never leaves a half-written model.

The step budget is the caller's (``tagger_steps``, ``parser_steps``); the sizes default to a reduced
Stanza (hidden 128, character hidden 64, two parser layers instead of three) so that a CPU run is
feasible; Stanza's own defaults (hidden 400, three layers, 50k steps) are the full recipe for a GPU.
Two settings decide whether the tagger is trainable on a CPU at all (measured on UD EWT, one core):

* ``tagger_biaffine`` (default off: Stanza's ``--share_hid``). Stanza conditions XPOS and each UFeats
  feature on the UPOS with an ``nn.Bilinear`` per column; on a CPU, torch runs it as ``_trilinear``,
  which materialises a (tokens x hidden x tag-embedding) product per output class. On EWT (53 XPOS
  tags, 20-odd features) that was 94 % of a step's time and 11 GB of allocations for 100 sentences
  (4-7 s a step at hidden 64 with Stanza's biaffine hidden 400; killed at 22 GB with 1000 sentences).
  ``--share_hid`` gives every column a linear classifier on the UPOS hidden layer: 0.6 s a step, 1.8 GB.
  The parser reads the predicted UPOS/XPOS/UFeats either way.
* The batch sizes are Stanza's units, which differ: ``tagger_batch`` counts *sentences* (Stanza: 250),
  ``parser_batch`` *words* (Stanza: 5000). One shared ``batch_size`` of 1000 meant 1000 sentences
  (~17k words) per tagger step.

The dev scores Stanza logs are its own; the study evaluates UAS/LAS separately
(``nmtvariants stanza-score``). What was trained (treebank, sentences, steps, sizes) is recorded in
``<lang>_training.json`` beside the models, so that the parser table can say which parser it scored.
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from nmtvariants.errors import InputError
from nmtvariants.fileio import PathLike, atomic_write
from nmtvariants.syntax.conllu import read_conllu
from nmtvariants.syntax.stanza_parse import StanzaModels


@dataclass(frozen=True)
class StanzaSizes:
    """Model sizes and batches of :func:`train_stanza` (``stanza-train --<name-with-dashes>``)."""

    tagger_hidden: int = 128
    parser_hidden: int = 128
    char_hidden: int = 64
    biaffine_hidden: int = 128  # tagger and parser (Stanza: 400)
    composite_hidden: int = 100  # the tagger's UFeats classifier, used only with tagger_biaffine
    parser_layers: int = 2
    tagger_batch: int = 100  # sentences per tagger step (Stanza: 250)
    parser_batch: int = 1000  # words per parser step (Stanza: 5000)
    tagger_biaffine: bool = False  # Stanza's bilinear XPOS/UFeats classifiers (see the module docstring)

    def tagger_args(self) -> list[str]:
        """The tagger's size options for ``python -m stanza.models.tagger``."""
        args = [
            "--hidden_dim", str(self.tagger_hidden), "--deep_biaff_hidden_dim", str(self.biaffine_hidden),
            "--composite_deep_biaff_hidden_dim", str(self.composite_hidden),
            "--batch_size", str(self.tagger_batch),
        ]  # fmt: skip
        return args if self.tagger_biaffine else [*args, "--share_hid"]

    def parser_args(self) -> list[str]:
        """The parser's size options for ``python -m stanza.models.parser``."""
        return [
            "--hidden_dim", str(self.parser_hidden), "--deep_biaff_hidden_dim", str(self.biaffine_hidden),
            "--num_layers", str(self.parser_layers), "--batch_size", str(self.parser_batch),
        ]  # fmt: skip


def _run(module: str, args: list[str], log_path: Path) -> None:
    env = dict(os.environ)
    with log_path.open("w") as log:
        result = subprocess.run(
            [sys.executable, "-m", module, *args], stdout=log, stderr=subprocess.STDOUT, env=env, check=False
        )
    if result.returncode != 0:
        tail = log_path.read_text(errors="replace").strip().splitlines()[-1:] or ["(no output)"]
        raise InputError(f"{module} failed (exit {result.returncode}): {tail[0]}; the full log is {log_path}")


def train_stanza(
    train: PathLike,
    dev: PathLike,
    model_dir: PathLike,
    lang: str,
    tagger_steps: int,
    parser_steps: int,
    sizes: StanzaSizes = StanzaSizes(),
    device: str = "cpu",
    seed: int = 1234,
) -> StanzaModels:
    """Train ``<lang>_tagger.pt`` and ``<lang>_parser.pt`` into ``model_dir``; return their location."""
    for path in (Path(train), Path(dev)):
        if not path.is_file():
            raise InputError(f"{path}: treebank not found; give a CoNLL-U file (UD train / dev)")
    models = StanzaModels(Path(model_dir), lang)
    models.model_dir.mkdir(parents=True, exist_ok=True)
    common = [
        "--train_file", str(train), "--eval_file", str(dev), "--lang", lang, "--shorthand", f"{lang}_nmtv",
        "--mode", "train", "--no_pretrain", "--char_hidden_dim",
        str(sizes.char_hidden), "--seed", str(seed), "--device", device,
    ]  # fmt: skip
    with tempfile.TemporaryDirectory(prefix=".stanza-train-", dir=models.model_dir) as scratch_name:
        scratch = Path(scratch_name)
        _run(
            "stanza.models.tagger",
            [
                *common,
                "--save_dir",
                str(scratch),
                "--save_name",
                models.tagger.name,
                "--output_file",
                str(scratch / "dev.pos.conllu"),
                "--max_steps",
                str(tagger_steps),
                "--eval_interval",
                str(max(1, tagger_steps // 4)),
                *sizes.tagger_args(),
            ],
            models.model_dir / f"{lang}_tagger.log",
        )
        _run(
            "stanza.models.parser",
            [
                *common,
                "--save_dir",
                str(scratch),
                "--save_name",
                models.parser.name,
                "--output_file",
                str(scratch / "dev.parse.conllu"),
                "--max_steps",
                str(parser_steps),
                "--eval_interval",
                str(max(1, parser_steps // 4)),
                *sizes.parser_args(),
                "--no_checkpoint",
            ],
            models.model_dir / f"{lang}_parser.log",
        )
        for target in (models.tagger, models.parser):
            produced = scratch / target.name
            if not produced.is_file():
                raise InputError(
                    f"{produced}: Stanza finished without writing the model; "
                    f"see the logs in {models.model_dir}"
                )
            os.replace(produced, target)
    record = {
        "train": str(train),
        "dev": str(dev),
        "train_sentences": len(read_conllu(train, validate=False)),
        "tagger_steps": tagger_steps,
        "parser_steps": parser_steps,
        "sizes": dataclasses.asdict(sizes),
        "device": device,
        "seed": seed,
    }
    with atomic_write(training_record(models)) as out:
        json.dump(record, out, indent=2, sort_keys=True)
        out.write("\n")
    return models


def training_record(models: StanzaModels) -> Path:
    """``<model_dir>/<lang>_training.json``: how :func:`train_stanza` trained the models."""
    return models.model_dir / f"{models.lang}_training.json"
