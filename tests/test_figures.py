"""Figures from long-format CSVs: what is drawn equals the CSV, the PNG is real and atomic."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import matplotlib
import matplotlib.image
import numpy as np
import pandas as pd
import pytest
from matplotlib.lines import Line2D
from matplotlib.patches import Rectangle

from nmtvariants.cli import main
from nmtvariants.errors import InputError
from nmtvariants.reporting.figures import (
    DPI,
    SIZE,
    bar_figure,
    heatmap_figure,
    layer_figure,
    png_path,
    save_png,
)

REPO = Path(__file__).resolve().parents[1]
LAYERS = {"baseline": [71.5, 64.0, 58.25], "pascal": [72.0, 69.5, 61.0], "lisa": [70.0, 66.0, 65.5]}


def layer_csv(path: Path) -> Path:
    # rows deliberately out of layer order, variants interleaved
    rows = [
        {"variant": variant, "layer": layer, "value": LAYERS[variant][layer - 1]}
        for layer in (3, 1, 2)
        for variant in LAYERS
    ]
    pd.DataFrame(rows).to_csv(path, index=False)
    return path


def attention_csv(path: Path) -> tuple[Path, np.ndarray, list[str], list[str]]:
    source, target = ["the", "cat", "the", "mat", "</s>"], ["die", "Katze", "</s>"]
    weights = np.random.default_rng(3).dirichlet(np.ones(len(source)), size=len(target))
    rows = [
        {"target_index": i, "target_token": t, "source_index": j, "source_token": s, "weight": weights[i, j]}
        for i, t in enumerate(target)
        for j, s in enumerate(source)
    ]
    pd.DataFrame(rows).sample(frac=1.0, random_state=0).to_csv(path, index=False)  # shuffled rows
    return path, weights, source, target


def test_layer_plot_has_one_line_per_variant_with_the_csv_values(tmp_path):
    figure = layer_figure(layer_csv(tmp_path / "probe.csv"), title="Probe accuracy")
    axes = figure.axes[0]
    lines = [line for line in axes.get_children() if isinstance(line, Line2D) and line.get_label() in LAYERS]
    assert len(axes.get_lines()) == len(LAYERS) == len(lines)
    for line in lines:
        assert list(line.get_xdata()) == [1, 2, 3]
        assert list(line.get_ydata()) == LAYERS[line.get_label()]
    assert [text.get_text() for text in axes.get_legend().get_texts()] == list(LAYERS)
    assert axes.get_title() == "Probe accuracy"


def test_replicas_are_drawn_as_their_mean_with_a_band_of_one_sample_sd(tmp_path):
    # three seeds of each variant at each layer: the line is the mean, the band mean ± sd (ddof=1)
    offsets = {1: -1.0, 2: 0.5, 3: 2.0}
    rows = [
        {
            "variant": variant,
            "layer": layer,
            "seed": seed,
            "value": LAYERS[variant][layer - 1] + offset * layer,
        }
        for variant in LAYERS
        for layer in (1, 2, 3)
        for seed, offset in offsets.items()
    ]
    pd.DataFrame(rows).to_csv(tmp_path / "seeds.csv", index=False)
    axes = layer_figure(tmp_path / "seeds.csv").axes[0]
    assert len(axes.get_lines()) == len(LAYERS) == len(axes.collections)
    for line, band, (variant, values) in zip(axes.get_lines(), axes.collections, LAYERS.items(), strict=True):
        assert line.get_label() == f"{variant} (mean ± sd, n=3)"
        per_layer = [
            [value + offset * layer for offset in offsets.values()] for layer, value in enumerate(values, 1)
        ]
        np.testing.assert_allclose(line.get_ydata(), [np.mean(v) for v in per_layer])
        lower, upper = band.get_paths()[0].vertices[:, 1].min(), band.get_paths()[0].vertices[:, 1].max()
        sds = [np.std(v, ddof=1) for v in per_layer]
        means = [np.mean(v) for v in per_layer]
        assert lower == pytest.approx(min(m - d for m, d in zip(means, sds, strict=True)))
        assert upper == pytest.approx(max(m + d for m, d in zip(means, sds, strict=True)))


def test_png_is_written_beside_the_csv_with_the_expected_size(tmp_path):
    csv = layer_csv(tmp_path / "probe.csv")
    out = save_png(layer_figure(csv), png_path(csv))
    assert out == tmp_path / "probe.png"
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    pixels = matplotlib.image.imread(out)
    assert pixels.shape[:2] == (round(SIZE[1] * DPI), round(SIZE[0] * DPI))
    assert pixels[..., :3].std() > 0  # something was drawn
    assert sorted(path.name for path in tmp_path.iterdir()) == ["probe.csv", "probe.png"]  # no temp file


def test_bars_are_grouped_and_equal_the_csv(tmp_path):
    frame = pd.DataFrame(
        {
            "label": ["newstest2014", "newstest2015"] * 2,
            "variant": ["baseline", "baseline", "shortcuts", "shortcuts"],
            "value": [27.1, 29.4, 27.9, 30.0],
        }
    )
    frame.to_csv(tmp_path / "bleu.csv", index=False)
    axes = bar_figure(tmp_path / "bleu.csv", group="variant").axes[0]
    bars = [patch for patch in axes.patches if isinstance(patch, Rectangle)]
    assert [bar.get_height() for bar in bars] == [27.1, 29.4, 27.9, 30.0]
    centres = [bar.get_x() + bar.get_width() / 2 for bar in bars]
    assert centres == pytest.approx([-0.2, 0.8, 0.2, 1.2])  # two groups side by side per test set
    assert [tick.get_text() for tick in axes.get_xticklabels()] == ["newstest2014", "newstest2015"]


def test_heatmap_matrix_and_token_labels_follow_the_indices(tmp_path):
    csv, weights, source, target = attention_csv(tmp_path / "attention.csv")
    figure = heatmap_figure(csv, title="layer 3")
    axes = figure.axes[0]
    drawn = axes.get_images()[0].get_array()
    np.testing.assert_allclose(np.asarray(drawn), weights)
    assert [tick.get_text() for tick in axes.get_xticklabels()] == source
    assert [tick.get_text() for tick in axes.get_yticklabels()] == target
    out = save_png(figure, png_path(csv))
    width = max(4.0, 0.4 * len(source) + 1.5)
    height = max(4.0, 0.4 * len(target) + 1.5)
    assert matplotlib.image.imread(out).shape[:2] == (round(height * DPI), round(width * DPI))


def test_missing_column_names_the_file_and_the_column(tmp_path):
    csv = layer_csv(tmp_path / "probe.csv")
    with pytest.raises(InputError, match=r"probe\.csv: no column 'accuracy'"):
        layer_figure(csv, y="accuracy")
    pd.DataFrame({"layer": [1, 2], "value": [0.5, "n/a"], "variant": ["a", "a"]}).to_csv(csv, index=False)
    with pytest.raises(InputError, match=r"probe\.csv:3: column 'value' holds 'n/a'"):
        layer_figure(csv)


def test_cli_draws_each_kind_and_reports_bad_input_in_one_line(tmp_path, capsys):
    csv = layer_csv(tmp_path / "probe.csv")
    assert main(["figure", "--kind", "layers", "--csv", str(csv), "--output", str(tmp_path / "p.png")]) == 0
    assert matplotlib.image.imread(tmp_path / "p.png").shape[:2] == (480, 640)
    attention, *_ = attention_csv(tmp_path / "attention.csv")
    assert main(["figure", "--kind", "heatmap", "--csv", str(attention)]) == 0
    assert (tmp_path / "attention.png").is_file()
    assert main(["figure", "--kind", "bars", "--csv", str(csv), "--x", "variant", "--group", "layer"]) == 0
    assert matplotlib.get_backend().lower() == "agg"
    capsys.readouterr()
    assert main(["figure", "--kind", "bars", "--csv", str(csv)]) == 2
    error = capsys.readouterr().err
    assert error.startswith("nmtvariants figure: error:") and "probe.csv: no column 'label'" in error


@pytest.mark.slow
def test_registered_figure_is_drawn_by_the_workflow_and_awaited_by_the_report(tmp_path):
    """A study file registers a figure: rule `figure` draws it from its CSV, the report rule waits
    for it, and `snakemake --report` lists it under Figures."""
    for name in ("Snakefile", "config.yaml"):
        shutil.copy2(REPO / name, tmp_path / name)
    for name in ("rules", "schemas", "envs", "workflow", "workflow_scripts"):
        shutil.copytree(REPO / name, tmp_path / name, ignore=shutil.ignore_patterns("__pycache__"))
    (tmp_path / "rules" / "studies" / "demo.smk").write_text(
        'register_figure("demo", "results/figures/demo/probe.png", "layers",'
        ' title="Probe accuracy", y="acc")\n',
        encoding="utf-8",
    )
    figures = tmp_path / "results" / "figures" / "demo"
    figures.mkdir(parents=True)
    pd.DataFrame(
        {"layer": [1, 2, 1, 2], "acc": [0.5, 0.7, 0.6, 0.9], "variant": ["a", "a", "b", "b"]}
    ).to_csv(figures / "probe.csv", index=False)
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO / "src"),
        "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ["PATH"]]),
    }

    def snakemake(*args: str) -> str:
        result = subprocess.run(
            [sys.executable, "-m", "snakemake", *args], cwd=tmp_path, env=env, capture_output=True, text=True
        )
        assert result.returncode == 0, result.stdout + result.stderr
        return result.stdout + result.stderr

    snakemake("-c1", "results/figures/demo/probe.png")
    drawn = layer_figure(figures / "probe.csv", y="acc").axes[0]
    assert [list(line.get_ydata()) for line in drawn.get_lines()] == [[0.5, 0.7], [0.6, 0.9]]
    assert matplotlib.image.imread(figures / "probe.png").shape[:2] == (480, 640)
    plan = snakemake("-n", "results/report.md")
    report_job = plan[plan.index("rule report:") :].splitlines()[1]
    assert "results/figures/demo/probe.png" in report_job and "provenance.json" in report_job
    snakemake("--report", "report.html", "results/figures/demo/probe.png")
    html = (tmp_path / "report.html").read_text(encoding="utf-8")
    assert "Figures" in html and "probe.png" in html
