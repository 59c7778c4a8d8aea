"""Snakemake adapter: named inputs -> nmtvariants.reporting.preprocessing.preprocessing_table."""

from pathlib import Path

from nmtvariants.reporting.preprocessing import NOTES, PairFiles, preprocessing_table
from nmtvariants.reporting.tables import write_table

pairs = []
for corpus, pair in snakemake.params.pairs:
    key = f"{corpus}_{pair.replace('-', '_')}"
    langs = pair.split("-")

    def by_lang(kind, key=key, langs=langs):
        return {lang: Path(snakemake.input[f"{key}_{kind}_{lang}"]) for lang in langs}

    pairs.append(
        PairFiles(
            corpus=corpus,
            pair=pair,
            drops_json=Path(snakemake.input[f"{key}_drops"]),
            vocab=Path(snakemake.input[f"{key}_vocab"]),
            tokenized_train=by_lang("tok"),
            truecased_train=by_lang("tc"),
            bpe_train=by_lang("bpe"),
            roundtrip_json={
                lang: [Path(p) for p in snakemake.input[f"{key}_roundtrip_{lang}"]] for lang in langs
            },
        )
    )
write_table(preprocessing_table(pairs), snakemake.output.md, "Preprocessing", NOTES)
