"""The data-statistics table against counts computed independently on real Multi30k text."""

from __future__ import annotations

import gzip

import pandas as pd

from nmtvariants.cli import main


def test_data_stats_on_real_multi30k(tmp_path, real_data):
    names = [f"{split}.{lang}.gz" for split in ("val", "test_2016_flickr") for lang in ("en", "de")]
    raw = real_data(*(f"multi30k/task1/raw/{name}" for name in names)) / "multi30k/task1/raw"
    files = []
    for split, name in [("valid", "val"), ("test", "test_2016_flickr")]:
        for lang in ("en", "de"):
            target = tmp_path / "multi30k" / "raw" / f"{split}.{lang}"
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(gzip.decompress((raw / f"{name}.{lang}.gz").read_bytes()))
            files.append(target)
    out = tmp_path / "stats.md"
    assert main(["data-stats", *map(str, files), "--out", str(out)]) == 0
    table = pd.read_csv(out.with_suffix(".csv"))
    assert list(table["split"]) == ["valid", "valid", "test", "test"]
    assert set(table["corpus"]) == {"multi30k"}
    for row in table.itertuples():
        path = tmp_path / "multi30k/raw" / f"{row.split}.{row.language}"
        lines = path.read_text(encoding="utf-8").splitlines()
        words = [word for line in lines for word in line.split()]
        assert (row.sentences, row.tokens, row.types) == (len(lines), len(words), len(set(words)))
    assert table.loc[table["split"] == "test", "sentences"].tolist() == [1000, 1000]
    assert out.read_text().startswith("# Data statistics")
