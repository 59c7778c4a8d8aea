"""results/report.md: every table and figure of a run, with the provenance needed to trust it.

A number in a table is only a reproduction if a reader can tell how it was made: which metric
implementation (the sacreBLEU signature), which configuration (a hash of the resolved config),
which code (the git commit, marked ``+dirty`` when the checkout had local edits), which data (the
sha256 sums recorded by the download manifests) and which hardware. This module gathers those
from the files the stages leave behind and writes one markdown page.

Conventions it reads (stages may add more; unknown JSON is ignored):
- tables: ``results/tables/*.md`` (each with a CSV beside it); a CSV column named ``signature``
  (or ``sacrebleu_signature``) carries the signatures of the scores in that table;
- figures: ``results/figures/*.{png,svg,pdf,jpg}``;
- score JSONs: any ``results/**/*.json`` with a string ``signature`` key (sacreBLEU's
  ``metric.get_signature()``); listed in a section of their own;
- hardware records: any ``results/**/*.json`` or ``models/**/*.json`` with a ``hardware`` mapping
  (written with :func:`hardware_info` by the jobs that train and decode);
- data manifests: ``data/**/manifest*.json`` (a mapping ``{path: sha256}``, a list of
  ``{"path"|"file": ..., "sha256": ...}``, or ``{"files": <either>}``) and ``data/**/SHA256SUMS``.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import platform
import subprocess
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from nmtvariants.errors import InputError
from nmtvariants.fileio import atomic_write

log = logging.getLogger(__name__)

FIGURE_SUFFIXES = {".png", ".svg", ".pdf", ".jpg", ".jpeg"}
SIGNATURE_COLUMNS = ("signature", "sacrebleu_signature")


def config_hash(config: dict[str, Any]) -> str:
    """First 12 hex digits of sha256 over the canonical JSON of the resolved config.

    Canonical = sorted keys, no whitespace, so that key order and YAML formatting do not matter.
    """
    canonical = json.dumps(config, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:12]


def git_commit(repo: str | os.PathLike[str]) -> str:
    """HEAD of the checkout at ``repo``, with ``+dirty`` if tracked files have local edits."""
    try:
        head = subprocess.run(
            ["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True, check=True
        ).stdout.strip()
        status = subprocess.run(
            ["git", "-C", str(repo), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown (not a git checkout)"
    return head + ("+dirty" if status else "")


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as handle:
            for line in handle:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def hardware_info() -> dict[str, Any]:
    """What this process runs on: CPU model and cores, memory, GPUs, torch and Python versions.

    Jobs that train or decode call this and store the result under ``"hardware"`` in their JSON,
    so that the report can say where each number was computed, not only where it was collected.
    """
    info: dict[str, Any] = {
        "host": platform.node(),
        "cpu": cpu_model(),
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "platform": platform.platform(),
    }
    try:
        pages, page_size = os.sysconf("SC_PHYS_PAGES"), os.sysconf("SC_PAGE_SIZE")
        info["memory_gb"] = round(pages * page_size / 1024**3, 1)
    except (ValueError, OSError):
        pass
    try:
        import torch
    except ImportError:
        info["torch"] = None
        info["gpus"] = []
        return info
    info["torch"] = torch.__version__
    if torch.cuda.is_available():
        info["cuda"] = torch.version.cuda
        info["gpus"] = [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
    else:
        info["gpus"] = []
    return info


def format_hardware(info: dict[str, Any]) -> str:
    gpus = info.get("gpus") or []
    gpu_text = ", ".join(gpus) if gpus else "none"
    parts = [
        f"{info.get('cpu', '?')} ({info.get('cores', '?')} cores)",
        f"GPU: {gpu_text}",
        f"torch {info.get('torch') or 'not installed'}",
        f"Python {info.get('python', '?')}",
    ]
    if info.get("memory_gb") is not None:
        parts.insert(1, f"{info['memory_gb']} GB RAM")
    if info.get("host"):
        parts.insert(0, f"host {info['host']}")
    return "; ".join(parts)


def read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as error:
        raise InputError(
            f"{path}:{error.lineno}: invalid JSON ({error.msg}); re-run the stage that wrote it"
        ) from None


def manifest_entries(path: Path) -> list[tuple[str, str]]:
    """(file, sha256) pairs of one manifest; see the module docstring for the accepted shapes."""
    if path.name == "SHA256SUMS":
        pairs = []
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            if not line.strip():
                continue
            digest, _, name = line.partition(" ")
            if len(digest) != 64 or not name.strip():
                raise InputError(f"{path}:{number}: expected '<sha256>  <file>', got {line!r}")
            pairs.append((name.strip().lstrip("*"), digest))
        return pairs
    document = read_json(path)
    if isinstance(document, dict) and "files" in document:
        document = document["files"]
    if isinstance(document, dict):
        return [
            (name, value["sha256"] if isinstance(value, dict) else value)
            for name, value in document.items()
            if isinstance(value, str) or (isinstance(value, dict) and "sha256" in value)
        ]
    if isinstance(document, list):
        return [
            (str(item.get("path") or item.get("file")), item["sha256"])
            for item in document
            if isinstance(item, dict) and "sha256" in item
        ]
    raise InputError(f"{path}: a manifest must map files to sha256 sums (see nmtvariants.reporting.report)")


def find_manifests(data_dir: Path) -> list[Path]:
    if not data_dir.is_dir():
        return []
    found = [*data_dir.rglob("manifest*.json"), *data_dir.rglob("SHA256SUMS")]
    return sorted(found)


def walk_json(paths: Iterable[Path]) -> Iterable[tuple[Path, Any]]:
    for path in sorted(paths):
        if path.is_file():
            yield path, read_json(path)


def find_key(document: Any, key: str) -> list[Any]:
    """Every value stored under ``key`` anywhere in a JSON document."""
    found = []
    if isinstance(document, dict):
        for name, value in document.items():
            if name == key:
                found.append(value)
            found.extend(find_key(value, key))
    elif isinstance(document, list):
        for item in document:
            found.extend(find_key(item, key))
    return found


@dataclass
class Provenance:
    """Run-wide provenance shared by all tables of one report."""

    config_hash: str
    commit: str
    hardware: dict[str, Any]
    data_checksums: list[tuple[str, str, str]] = field(default_factory=list)  # manifest, file, sha256


def table_signatures(md_path: Path) -> list[str]:
    csv_path = md_path.with_suffix(".csv")
    if not csv_path.exists():
        return []
    frame = pd.read_csv(csv_path)
    signatures: list[str] = []
    for column in SIGNATURE_COLUMNS:
        if column in frame.columns:
            signatures.extend(str(value) for value in frame[column].dropna().unique())
    return sorted(set(signatures))


def build_report(
    results_dir: Path,
    data_dir: Path,
    config: dict[str, Any],
    repo: Path,
    models_dir: Path | None = None,
    hardware: dict[str, Any] | None = None,
) -> str:
    """The markdown text of the report for the tables and figures under ``results_dir``."""
    results_dir, data_dir = Path(results_dir), Path(data_dir)
    tables = sorted((results_dir / "tables").rglob("*.md"))
    figures = sorted(
        path for path in (results_dir / "figures").rglob("*") if path.suffix.lower() in FIGURE_SUFFIXES
    )
    provenance = Provenance(
        config_hash=config_hash(config),
        commit=git_commit(repo),
        hardware=hardware if hardware is not None else hardware_info(),
    )
    for manifest in find_manifests(data_dir):
        for name, digest in manifest_entries(manifest):
            provenance.data_checksums.append((manifest.relative_to(data_dir).as_posix(), name, digest))
    json_files = list(results_dir.rglob("*.json"))
    if models_dir is not None and Path(models_dir).is_dir():
        json_files += list(Path(models_dir).rglob("*.json"))
    scores, computed_on = [], []
    for path, document in walk_json(json_files):
        shown = Path(os.path.relpath(path, results_dir.parent)).as_posix()
        if isinstance(document, dict) and isinstance(document.get("signature"), str):
            scores.append((shown, document))
        for record in find_key(document, "hardware"):
            if isinstance(record, dict):
                computed_on.append((shown, format_hardware(record)))

    run_line = (
        f"config hash `{provenance.config_hash}` · commit `{provenance.commit}` · "
        f"report host: {format_hardware(provenance.hardware)}"
    )
    lines = ["# nmtvariants report", "", run_line, ""]
    if not tables and not figures:
        lines += ["No tables or figures under results/ yet.", ""]
    for table in tables:
        relative = table.relative_to(results_dir).as_posix()
        body = table.read_text(encoding="utf-8").strip().splitlines()
        if body and body[0].startswith("# "):
            body[0] = "#" + body[0]  # the table's own title becomes a section
        else:
            body.insert(0, f"## {table.stem}")
        lines += [*body, ""]
        signatures = table_signatures(table)
        lines.append(f"- source: [{relative}]({relative}) · config `{provenance.config_hash}` · "
                     f"commit `{provenance.commit}`")  # fmt: skip
        if signatures:
            lines += [f"- sacreBLEU signature: `{signature}`" for signature in signatures]
        else:
            lines.append("- sacreBLEU signature: none (no scores in this table)")
        lines.append("")
    for figure in figures:
        relative = figure.relative_to(results_dir).as_posix()
        lines += [
            f"## Figure: {figure.stem}",
            "",
            f"![{figure.stem}]({relative})",
            "",
            f"- source: [{relative}]({relative}) · config `{provenance.config_hash}` · "
            f"commit `{provenance.commit}`",
            "",
        ]
    lines += ["## Scores and their signatures", ""]
    if scores:
        lines += ["| file | metric | score | signature |", "|---|---|---|---|"]
        for shown, document in scores:
            metric = document.get("metric") or document.get("name") or ""
            score = document.get("score", "")
            lines.append(f"| {shown} | {metric} | {score} | `{document['signature']}` |")
    else:
        lines.append("No score files with a sacreBLEU signature under results/.")
    lines += ["", "## Data checksums", ""]
    if provenance.data_checksums:
        lines += ["| manifest | file | sha256 |", "|---|---|---|"]
        lines += [f"| {m} | {name} | `{digest}` |" for m, name, digest in provenance.data_checksums]
    else:
        lines.append("No download manifests under data/ (generated data only, e.g. toyworld).")
    lines += ["", "## Hardware", "", f"- report written on: {format_hardware(provenance.hardware)}"]
    lines += [f"- {shown}: {text}" for shown, text in computed_on]
    lines += [
        "",
        "## Configuration",
        "",
        f"Config hash `{provenance.config_hash}` = first 12 hex digits of sha256 over the resolved "
        "config as canonical JSON:",
        "",
        "```json",
        json.dumps(config, sort_keys=True, indent=2, ensure_ascii=False),
        "```",
        "",
    ]
    return "\n".join(lines)


def write_report(out: Path, **kwargs: Any) -> Path:
    """Build the report (see :func:`build_report`) and write it atomically to ``out``."""
    text = build_report(**kwargs)
    with atomic_write(out) as handle:
        handle.write(text)
    log.info("wrote %s", out)
    return Path(out)
