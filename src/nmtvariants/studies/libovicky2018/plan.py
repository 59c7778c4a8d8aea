"""What rules/studies/libovicky2018.smk builds for a config: the file names and arguments of every job.

The study's rules only name paths and call :class:`Libovicky2018Plan` (a
:class:`nmtvariants.studies.plan_base.StudyPlan`, as every study's planner; the workflow keeps its
logic in the package). Experiments with ``study: libovicky2018`` name the extra inputs of their variants:
``inputs.<variant>: {features: resnet}`` (images: Table 1) or ``{sources: [src_<lang>, ...]}``
(further source languages: Table 2). For each variant with extra inputs the test set is translated
again with one input deranged (the image; or each source language in turn), once per derangement
seed (``studies.libovicky2018.derangement_seeds``, default :data:`SEEDS`); the flat and
hierarchical variants also give the attention figure.

An experiment with several training ``seeds`` has one replica per seed (nmtvariants.config.replica_name:
the first seed's folder is the variant's own name, the others ``<variant>-seed<N>``). Every rule here
with a ``{variant}`` wildcard serves every replica (:meth:`StudyPlan.variant_inputs` reads a replica's
inputs from its variant), and each replica gets its own adversarial decodes over the derangement
seeds; Tables 1 and 2 and the attention figure read every replica (mean ± sd over training seeds; the
figure's band).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from nmtvariants.config import decode_settings, experiment_systems, shared_bpe_languages
from nmtvariants.errors import ConfigError
from nmtvariants.layout import bpe_file
from nmtvariants.reporting.manifest import Entry
from nmtvariants.studies.plan_base import RunIndex, StudyPlan

STUDY = "libovicky2018"
SEEDS = (1, 2, 3)  # default derangement seeds of every adversarial evaluation
ATTENTION_SENTENCES = 200  # test pairs behind the attention figure
EUROPARL_HELDOUT = 1000  # valid and test tuples of the Europarl 5-way corpus (the paper's 1k/1k)
FEATURES = "resnet"  # the name of the image features input (data/<corpus>/<pair>/inputs/<split>.resnet.npy)
TABLES = ("table1_mmt", "table2_multisource")
FIGURE = "results/figures/libovicky2018/attention_layers.png"
IMAGE_DEFAULTS = {
    "weights": "random",
    "depth": 50,
    "size": 224,
    "batch_size": 32,
    "images": "data/multi30k_images",
    "standardise": False,  # the paper's raw features (vision/features.py: standardise_regions)
}
BASELINE_LABELS = {"table1_mmt": "text-only baseline", "table2_multisource": "single-source baseline"}
KIND_LABELS = {"table1_mmt": "MMT", "table2_multisource": "multi-source"}
TITLES = {
    "table1_mmt": "Libovický et al. (2018) Table 1: multimodal translation (BLEU, METEOR; adversarial BLEU"
    " with deranged images)",
    "table2_multisource": "Libovický et al. (2018) Table 2: multi-source translation (BLEU, METEOR;"
    " adversarial BLEU with one source language deranged)",
}

System = tuple[str, str, str, str]  # experiment, pair, variant, test set


class Libovicky2018Plan(StudyPlan):
    """The study's jobs for one resolved config; ``run_of`` is rules/common.smk's RUN_OF (the shared
    content-addressed runs)."""

    study = STUDY

    def __init__(self, config: Mapping[str, Any], run_of: RunIndex) -> None:
        super().__init__(config, run_of)
        self.images = {**IMAGE_DEFAULTS, **config.get("image_features", {})}
        self.meteor_home = (config.get("meteor") or {}).get("home")
        seeds = self.derangement_seeds = tuple(self.settings.get("derangement_seeds", SEEDS))
        if not seeds or not all(isinstance(seed, int) and seed >= 0 for seed in seeds):
            raise ConfigError(
                f"studies.{STUDY}.derangement_seeds: give a non-empty list of seeds >= 0, not {seeds!r}"
            )
        self.shared_bpe = shared_bpe_languages(dict(self.corpora))
        for name in self.experiments:  # fail at start-up, not at the first job
            self.kind(name)
            self.check_shared_bpe(name)
        self.europarl = {
            name: langs for name, corpus in self.corpora.items() if (langs := europarl_languages(corpus))
        }
        for name in self.europarl:
            corpus = self.corpora[name]
            if (corpus["train"], corpus["valid"], corpus["testsets"]) != ("train", "valid", ["test"]):
                raise ConfigError(
                    f"corpora.{name}: the Europarl 5-way corpus has the splits train, valid, [test]"
                )

    # --- experiments ---------------------------------------------------------------------------
    def extra_langs(self, experiment: str, variant: str) -> list[str]:
        """The languages of a variant's further sources (named ``src_<lang>``)."""
        langs = []
        for name in self.variant_inputs(experiment, variant).get("sources", []):
            if not re.fullmatch(r"src_[a-z]+", name):
                raise ConfigError(
                    f"experiments.{experiment}.inputs.{variant}.sources: {name!r}; {STUDY} names a further "
                    "source src_<lang> (e.g. src_fr), which its rules write"
                )
            langs.append(name.removeprefix("src_"))
        return langs

    def check_shared_bpe(self, experiment: str) -> None:
        """Every further source language must share its pair's joint BPE (``shared_with``): the model has
        one vocabulary, which then holds the units of every source language (the paper's shared
        vocabulary); the pair's two-language BPE would cut a further language into characters."""
        spec = self.experiments[experiment]
        for variant in spec["variants"]:
            for lang in self.extra_langs(experiment, variant):
                for pair in spec["pairs"]:
                    if lang not in self.shared_bpe.get((spec["corpus"], pair), []):
                        raise ConfigError(
                            f"experiments.{experiment}.inputs.{variant}.sources: src_{lang} needs the BPE "
                            f"of {pair} learned on {lang} too; add `shared_with: {{{pair}: [{lang}]}}` (with "
                            f"the pair's other further languages) to corpora.{spec['corpus']}.preprocess.bpe"
                        )

    def has_images(self, experiment: str, variant: str) -> bool:
        features = self.variant_inputs(experiment, variant).get("features")
        if features not in (None, FEATURES):
            raise ConfigError(
                f"experiments.{experiment}.inputs.{variant}.features: {features!r}; {STUDY} writes the image "
                f"features as {FEATURES!r}"
            )
        return features is not None

    def kind(self, experiment: str) -> str | None:
        """table1_mmt (a variant reads images), table2_multisource (a variant reads more sources)."""
        variants = self.experiments[experiment]["variants"]
        if any(self.has_images(experiment, v) for v in variants):
            return "table1_mmt"
        if any(self.extra_langs(experiment, v) for v in variants):
            return "table2_multisource"
        return None

    def strategy(self, experiment: str, variant: str) -> str | None:
        """The variant's combination strategy; None for a single-input variant (a baseline row)."""
        if not self.variant_inputs(experiment, variant):
            return None
        variant = self.variant_of(experiment, variant)
        options = (self.experiments[experiment]["variants"][variant] or {}).get("multi_source") or {}
        return options.get("strategy", "serial")

    def randomised(self, experiment: str, pair: str, variant: str) -> list[str]:
        """What the adversarial decodes replace: the image; with further sources, each source language
        in turn (the first source's, then the further ones)."""
        names = ["image"] if self.has_images(experiment, variant) else []
        extra = self.extra_langs(experiment, variant)
        return names + ([pair.split("-")[0], *extra] if extra else [])

    def memories(self, experiment: str, pair: str, variant: str) -> list[str]:
        """Names of the model's memories in order: text sources, then the image."""
        names = [pair.split("-")[0], *self.extra_langs(experiment, variant)]
        return names + (["image"] if self.has_images(experiment, variant) else [])

    def systems(self, kind: str) -> list[System]:
        """The rows of a table, in config order: every experiment of that kind, pair, test set, variant."""
        return [
            (name, pair, variant, testset)
            for name, spec in self.experiments.items()
            if self.kind(name) == kind
            for pair in spec["pairs"]
            for testset in spec["evaluate"]["testsets"]
            for of, variant in experiment_systems(spec)
            if of == pair
        ]

    def table_manifest(self, kind: str) -> list[Entry]:
        """Table 1 or 2: every training seed of every row (row by row, seed by seed within a row), with
        the replica's clean scores and, for a multi-input system, its adversarial summary; the row's
        label is the strategy (or the baseline's name). The replicas of a row share its system."""
        entries = []
        for e, p, v, t in self.systems(kind):
            for replica in self.replicas(e, p, v):
                folder = self.folder(e, p, replica.name)
                files = {"clean": f"{folder}/{t}.clean.json"}
                if self.variant_inputs(e, v):
                    files["adversarial"] = f"{folder}/{t}.adversarial.json"
                label = self.strategy(e, v) or BASELINE_LABELS[kind]
                entries.append(Entry(files, e, p, v, replica.seed, t, label=label))
        return entries

    def tables(self) -> list[str]:
        """Table 1 (experiments whose variants read images) and Table 2 (more sources), with rows."""
        return [self.table_path(kind) for kind in TABLES if self.systems(kind)]

    def figures(self) -> dict[str, dict[str, Any]]:
        """The attention figure: the share of each source per decoder layer, flat and hierarchical."""
        if not self.attention_systems():
            return {}
        title = "Attention over sources per decoder layer"
        return {
            FIGURE: {
                "kind": "layers",
                "x": "layer",
                "y": "share",
                "group": "label",
                "title": title,
                "ylabel": "share of the cross-attention",
            }
        }

    def attention_systems(self) -> list[System]:
        """Flat and hierarchical variants on their experiment's first test set."""
        return [
            (e, p, v, t)
            for kind in TABLES
            for e, p, v, t in self.systems(kind)
            if self.strategy(e, v) in ("flat", "hierarchical")
            and t == self.experiments[e]["evaluate"]["testsets"][0]
        ]

    @staticmethod
    def folder(experiment: str, pair: str, variant: str) -> str:
        return f"results/{STUDY}/{experiment}/{pair}/{variant}"

    def decode(self, wildcards: Any, key: str) -> Any:
        """A search setting of the experiment (the same search as its clean translation)."""
        return decode_settings(self.config, wildcards.experiment)[key]

    # --- inputs: image features ---------------------------------------------------------------------

    def image_setting(self, wildcards: Any, key: str) -> Any:
        corpus = wildcards.corpus
        if not self.is_toyworld(corpus) and "multi30k" not in as_list(self.corpora[corpus]["source"]):
            raise ConfigError(
                f"corpora.{corpus}: image features need a corpus with images (toyworld or multi30k)"
            )
        if key == "standardise":
            return "region" if self.images["standardise"] else "none"
        if key == "images":
            return (
                f"data/toyworld/images/{wildcards.split}"
                if self.is_toyworld(corpus)
                else self.images["images"]
            )
        return self.images[key]

    def image_gpus(self, wildcards: Any) -> int:
        """A GPU for the ResNet over the user's images (29k photographs); toyworld's small PNGs and small
        ResNet run on the CPU (the offline demo)."""
        return 0 if self.is_toyworld(wildcards.corpus) else 1

    def image_inputs(self, wildcards: Any) -> dict[str, str]:
        """toyworld: its rendered scenes and split list; Multi30k: its text (the split list
        ``<split>.images`` comes with it), the images being the user's."""
        if self.is_toyworld(wildcards.corpus):
            return {
                "list": f"data/toyworld/image_splits/{wildcards.split}.txt",
                "images": "data/toyworld/images",
            }
        lang = self.corpora[wildcards.corpus]["pairs"][0].split("-")[0]
        return {"text": f"data/{wildcards.corpus}/raw/{wildcards.split}.{lang}"}

    def image_list(self, wildcards: Any) -> str:
        if self.is_toyworld(wildcards.corpus):
            return f"data/toyworld/image_splits/{wildcards.split}.txt"
        return f"data/{wildcards.corpus}/raw/{wildcards.split}.images"

    # --- the Europarl 5-way corpus ------------------------------------------------------------------
    @staticmethod
    def bitext(lang: str) -> list[str]:
        return [f"data/{STUDY}/europarl/{lang}-en/train.{lang}", f"data/{STUDY}/europarl/{lang}-en/train.en"]

    def europarl_outputs(self, name: str) -> list[str]:
        return [
            f"data/{name}/raw/{split}.{lang}"
            for split in ("train", "valid", "test")
            for lang in [*self.europarl[name], "en"]
        ]

    def europarl_args(self, name: str) -> list[str]:
        return [word for lang in self.europarl[name] for word in ("--bitext", lang, *self.bitext(lang))]

    # --- adversarial evaluation ---------------------------------------------------------------------
    def text_source(self, corpus: str, pair: str, testset: str, lang: str) -> str:
        """The clean BPE'd test text of source language ``lang`` (the first source or a further one)."""
        if lang == pair.split("-")[0]:
            return bpe_file(corpus, pair, f"{testset}.{lang}")
        return f"data/{corpus}/{pair}/inputs/{testset}.src_{lang}"

    def derange_input(self, wildcards: Any) -> str:
        return self.text_source(wildcards.corpus, wildcards.pair, wildcards.testset, wildcards.randomised)

    def decode_inputs(self, wildcards: Any) -> dict[str, str]:
        """Model, vocabulary and test inputs of one adversarial decode: all clean but the randomised one,
        its deranged copy (text) or read through a deranged index (image)."""
        corpus, pair, testset = self.corpus(wildcards.experiment), wildcards.pair, wildcards.testset
        randomised = wildcards.randomised
        if randomised not in self.randomised(wildcards.experiment, pair, wildcards.variant):
            raise ConfigError(
                f"{wildcards.experiment}/{pair}/{wildcards.variant}: no input {randomised!r} to randomise"
            )
        deranged = f"data/{corpus}/{pair}/adversarial/{testset}.{randomised}.seed{wildcards.seed}"

        def text(lang: str) -> str:
            return deranged if lang == randomised else self.text_source(corpus, pair, testset, lang)

        inputs = self.test_inputs(wildcards, text)
        if randomised == "image":
            inputs["feature_index"] = f"{deranged}.index"
        return inputs

    def test_inputs(self, wildcards: Any, text: Any = None) -> dict[str, str]:
        corpus, pair, testset = self.corpus(wildcards.experiment), wildcards.pair, wildcards.testset
        text = text or (lambda lang: self.text_source(corpus, pair, testset, lang))
        inputs = {
            "model": self.checkpoint(wildcards.experiment, wildcards.pair, wildcards.variant),
            "vocab": bpe_file(corpus, pair, "vocab.txt"),
            "source": text(pair.split("-")[0]),
        }
        for k, lang in enumerate(self.extra_langs(wildcards.experiment, wildcards.variant)):
            inputs[f"extra_{k}"] = text(lang)
        if self.has_images(wildcards.experiment, wildcards.variant):
            inputs["features"] = f"data/{corpus}/{pair}/inputs/{testset}.{FEATURES}.npy"
        return inputs

    @staticmethod
    def input_args(wildcards: Any, input: Any) -> list[str]:
        """``--extra-source``, ``--features``, ``--feature-index`` for the inputs of a decode."""
        args = []
        names = list(input.keys())
        for key in names:
            if key.startswith("extra_"):
                args += ["--extra-source", input[key]]
        for key, option in (("features", "--features"), ("feature_index", "--feature-index")):
            if key in names:
                args += [option, input[key]]
        return args

    def hypothesis(self, wildcards: Any) -> str:
        """The clean hypothesis is the experiment's own post-processed translation (rules/evaluate.smk)."""
        if wildcards.name == "clean":
            return (
                f"results/{wildcards.experiment}/{wildcards.pair}/{wildcards.variant}/{wildcards.testset}.hyp"
            )
        folder = self.folder(wildcards.experiment, wildcards.pair, wildcards.variant)
        return f"{folder}/{wildcards.testset}.{wildcards.name}.hyp"

    def reference(self, wildcards: Any) -> str:
        return self.reference_text(wildcards.experiment, wildcards.pair, wildcards.testset)

    def truecased(self, wildcards: Any) -> list[str]:
        return (
            ["--truecased"]
            if self.corpora[self.corpus(wildcards.experiment)]["preprocess"]["truecase"]
            else []
        )

    def adversarial_runs(self, wildcards: Any) -> dict[str, str]:
        folder = self.folder(wildcards.experiment, wildcards.pair, wildcards.variant)
        return {
            f"{randomised}_{seed}": f"{folder}/{wildcards.testset}.{randomised}.seed{seed}.json"
            for randomised in self.randomised(wildcards.experiment, wildcards.pair, wildcards.variant)
            for seed in self.derangement_seeds
        }

    @staticmethod
    def adversarial_args(wildcards: Any, input: Any) -> list[str]:
        return [
            word
            for key in list(input.keys())
            if key != "clean"
            for word in ("--run", f"{key.rsplit('_', 1)[0]}={input[key]}")
        ]

    # --- the attention figure -----------------------------------------------------------------------
    def attention_inputs(self, wildcards: Any) -> dict[str, str]:
        corpus, pair, testset = self.corpus(wildcards.experiment), wildcards.pair, wildcards.testset
        inputs = self.test_inputs(wildcards)
        inputs["target"] = bpe_file(corpus, pair, f"{testset}.{pair.split('-')[1]}")
        return inputs

    def attention_manifest(self) -> list[Entry]:
        """The figure's attention CSVs, one per replica (training seed) of each system, each labelled
        with its system's line name: "<task> <pair> <strategy>", with the experiment and variant added
        only where two systems would otherwise share a name. A system's replicas share its line, which
        the figure draws as their mean with a ± sd band."""
        systems = self.attention_systems()
        short = [f"{KIND_LABELS[self.kind(e)]} {p} {self.strategy(e, v)}" for e, p, v, _ in systems]
        return [
            Entry(
                {"attention": f"{self.folder(e, p, replica.name)}/{t}.attention.csv"},
                e,
                p,
                v,
                replica.seed,
                testset=t,
                label=name if short.count(name) == 1 else f"{name} ({e}/{v})",
            )
            for name, (e, p, v, t) in zip(short, systems, strict=True)
            for replica in self.replicas(e, p, v)
        ]

    # --- Tables 1 and 2 -----------------------------------------------------------------------------
    def table_conditions(self, wildcards: Any) -> list[str]:
        """``--condition`` arguments of the table builder: which of the study's conditional deviations
        from the paper (``DEVIATIONS`` in the study's tables.py) the config's systems of this table meet."""
        systems = self.systems(wildcards.table)
        corpora = {self.experiments[e]["corpus"] for e, *_ in systems}
        conditions = [] if self.meteor_home else ["nltk_meteor"]
        if any(self.is_toyworld(corpus) for corpus in corpora):
            conditions.append("toyworld")
        if wildcards.table == "table2_multisource":
            if any("multi30k" in as_list(self.corpora[corpus]["source"]) for corpus in corpora):
                conditions.append("multi30k_sources")
            if any(corpus in self.europarl for corpus in corpora):
                conditions.append("europarl")
        if wildcards.table == "table1_mmt":
            if self.images["weights"] == "random":
                conditions.append("untrained_image_features")
            if self.images["standardise"]:
                conditions.append("standardised_image_features")
            variants = [self.experiments[e]["variants"][v] or {} for e, _, v, _ in systems]
            features = [(v.get("multi_source") or {}).get("features") or {} for v in variants]
            if any(f.get("layer_norm") for f in features):
                conditions.append("image_layer_norm")
        return [arg for condition in conditions for arg in ("--condition", condition)]

    def table_notes(self, wildcards: Any) -> str:
        seeds = self.derangement_seeds
        notes = (
            "BLEU and METEOR on lower-cased, Moses-normalised and tokenised text (`evaluate --preprocess "
            "multi30k`, the WMT multimodal evaluation). adv. BLEU (X): per training seed, the mean over "
            f"{len(seeds)} derangement seeds ({', '.join(map(str, seeds))}) of BLEU with input X "
            "of every test sentence replaced by another sentence's, then over the training seeds like "
            "every score; derangement sd (X): per training seed, the sample standard deviation over the "
            "derangement seeds (each training seed's in the CSV), averaged over the training seeds; "
            "derangements (X): the derangement seeds per training seed. "
            "Baseline rows: the single-input model on the same data (its run is shared)."
        )
        if wildcards.table == "table2_multisource":
            notes += (
                " One joint BPE and network vocabulary over every source language and the target, as in "
                "the paper (preprocess.bpe.shared_with); the single-source baseline uses the same one."
            )
        if wildcards.table == "table1_mmt":
            weights = self.images["weights"]
            notes += (
                f" Image features: the last convolutional block of a ResNet-{self.images['depth']} at "
                f"{self.images['size']} px, weights: "
                + (
                    "random, a fixed-seed untrained ResNet the pipeline builds offline "
                    "(NOT ImageNet features)"
                    if weights == "random"
                    else f"{weights} (ImageNet)"
                )
                + (", standardised per region" if self.images["standardise"] else "")
                + "."
            )
            toy = sorted({self.experiments[e]["corpus"] for e, *_ in self.systems("table1_mmt")})
            toy = [corpus for corpus in toy if self.is_toyworld(corpus)]
            if toy:
                notes += " Images of toyworld: its rendered scenes (corpora/toyworld_image.py)."
        return notes


def as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def europarl_languages(corpus: Mapping[str, Any]) -> list[str]:
    """The foreign languages of a corpus made only of Europarl v7 X-en bitexts (the 5-way corpus the
    paper intersects on English), else []."""
    sources = as_list(corpus["source"])
    found = [re.fullmatch(r"europarl_v7_([a-z]+)en", str(source)) for source in sources]
    if len(sources) < 2 or not all(found):
        return []
    return [match.group(1) for match in found if match]
