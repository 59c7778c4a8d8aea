"""results/report.md: every table and figure of a run, with the provenance needed to trust it.

A number in a table is only a reproduction if a reader can tell how it was made: which metric
implementation (the sacreBLEU signature), which configuration (a hash of the resolved config),
which code (the git commit that computed it, marked ``+dirty`` when the checkout had local edits),
which data (the sha256 sums recorded by the manifests) and which hardware. This module gathers
those from the files the stages leave behind and writes one markdown page, plus the full data
manifest beside it (``data_manifest.json``; the page shows one digest per corpus).

What it reads (unknown JSON is ignored):
- tables: ``results/tables/**/*.md``, each with the provenance record that
  :func:`nmtvariants.reporting.tables.write_table` writes beside it (``<stem>.provenance.json``:
  the commit of every input file, as stamped by the stage that wrote it, and the sacreBLEU
  signatures of score files, ``scores.<metric>.signature`` as ``evaluate`` writes them). Library
  edits never re-run jobs, so each table is shown with its own commits, never the report's;
- figures: ``results/figures/**/*.{png,svg,pdf,jpg}`` (PNG text chunk ``nmtvariants-commit``);
- training runs: ``models/**/run.json`` (updates, commit, and the hardware they trained on);
- data manifests: ``data/**/manifest*.json`` (a mapping ``{path: sha256}``, a list of
  ``{"path"|"file": ..., "sha256": ...}``, or ``{"files": <either>}``) and ``data/**/SHA256SUMS``.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from pathlib import Path
from typing import Any

from nmtvariants.errors import InputError
from nmtvariants.fileio import atomic_write
from nmtvariants.hardware import hardware_info
from nmtvariants.provenance import PNG_COMMIT_KEY, UNKNOWN, describe, git_state
from nmtvariants.reporting.results import collect_signatures, signature_lines
from nmtvariants.reporting.tables import provenance_path
from nmtvariants.training.plateau import PLATEAU_TOLERANCE, plateau_record

log = logging.getLogger(__name__)

FIGURE_SUFFIXES = {".png", ".svg", ".pdf", ".jpg", ".jpeg"}
MANIFEST_NAME = "data_manifest.json"


def config_hash(config: dict[str, Any]) -> str:
    """First 12 hex digits of sha256 over the canonical JSON of the resolved config.

    Canonical = sorted keys, no whitespace, so that key order and YAML formatting do not matter.
    """
    canonical = json.dumps(config, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:12]


def git_commit(repo: str | os.PathLike[str]) -> str:
    """HEAD of the checkout at ``repo``, with ``+dirty`` if tracked files have local edits."""
    state = git_state(repo)
    return describe(state) if state["commit"] != UNKNOWN else "unknown (not a git checkout)"


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


def corpus_manifests(data_dir: Path) -> dict[str, dict[str, str]]:
    """Corpus (first folder under ``data_dir``) -> {file: sha256} from all of its manifests.

    File names are made relative to the corpus folder (``raw/train.en``, ``images/...``) so that
    two manifests of one corpus cannot collide.
    """
    corpora: dict[str, dict[str, str]] = {}
    for manifest in find_manifests(data_dir):
        parts = manifest.relative_to(data_dir).parts
        corpus, folder = (parts[0], Path(*parts[1:-1])) if len(parts) > 1 else ("(data)", Path())
        files = corpora.setdefault(corpus, {})
        for name, digest in manifest_entries(manifest):
            files[(folder / name).as_posix()] = digest
    return corpora


def corpus_digest(files: dict[str, str]) -> str:
    """sha256 of the sorted ``<sha256>  <file>`` lines (``sha256sum`` format) of one corpus.

    Reproduce it with ``jq -r '.corpora.<corpus>.files | to_entries[] | "\\(.value)  \\(.key)"'
    data_manifest.json | LC_ALL=C sort -k2 | sha256sum``.
    """
    text = "".join(f"{files[name]}  {name}\n" for name in sorted(files))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def data_manifest(data_dir: Path) -> dict[str, Any]:
    """The full manifest the report points to: per corpus, its digest and every file's sha256."""
    return {
        "digest": "sha256 of the sorted '<sha256>  <file>' lines of a corpus",
        "corpora": {
            corpus: {
                "digest": corpus_digest(files),
                "count": len(files),
                "files": dict(sorted(files.items())),
            }
            for corpus, files in sorted(corpus_manifests(Path(data_dir)).items())
        },
    }


def read_table_provenance(md_path: Path) -> dict[str, Any] | None:
    """The provenance record written beside a table, or None for a table written without one."""
    path = provenance_path(md_path)
    if not path.is_file():
        return None
    record = read_json(path)
    if not isinstance(record, dict) or not isinstance(record.get("sources", []), list):
        raise InputError(f"{path}: not a table provenance record; re-run the rule that wrote the table")
    return record


def commit_groups(sources: list[dict[str, Any]]) -> dict[str, list[str]]:
    """Commit (``describe``) -> the input files it computed, in first-seen order."""
    groups: dict[str, list[str]] = {}
    for source in sources:
        groups.setdefault(describe(source.get("provenance")), []).append(str(source.get("path")))
    return groups


def run_commits(sources: list[dict[str, Any]], runs: dict[str, dict[str, Any]]) -> dict[str, list[str]]:
    """Commit -> systems, for score inputs whose system's training run has a ``run.json``
    (``runs``: system -> record, :func:`runs_by_system`)."""
    groups: dict[str, list[str]] = {}
    for system in dict.fromkeys(str(s["system"]) for s in sources if s.get("system")):
        if system in runs:
            groups.setdefault(describe(runs[system].get("provenance")), []).append(system)
    return groups


def plateau_line(sources: list[dict[str, Any]], runs: dict[str, dict[str, Any]]) -> str | None:
    """How many of a table's trained systems reached their plateau (see Training runs); None when no
    input names a system with a run record."""
    named = dict.fromkeys(str(source["system"]) for source in sources if source.get("system"))
    systems = [system for system in named if system in runs]
    if not systems:
        return None
    states = {system: (run_plateau(runs[system]) or {}).get("at_plateau") for system in systems}
    at = sum(state is True for state in states.values())
    if at == len(systems):
        return f"- training: every model of the table ({at}) at its plateau (Training runs)"
    learning = [system for system, state in states.items() if state is False]
    unknown = [system for system, state in states.items() if state is None]
    line = (
        f"- **training: {at} of {len(systems)} models at their plateau**: differences between rows whose "
        "models still learn may rank how fast each starts, not which is better (Training runs)"
    )
    if learning:
        line += f"; still learning: {', '.join(learning)}"
    if unknown:
        line += f"; not known: {', '.join(unknown)}"
    return line


def provenance_lines(record: dict[str, Any] | None, runs: dict[str, dict[str, Any]]) -> list[str]:
    """Markdown bullets for one table: the commits that computed it and its sacreBLEU signatures."""
    if record is None:
        return [
            "- commit: not recorded (the table was written without a provenance record; "
            "re-run its rule to record one)"
        ]
    sources, writer = record.get("sources", []), describe(record.get("written_by"))
    lines = []
    groups = commit_groups(sources)
    if not sources:
        lines.append(f"- computed by commit `{writer}` (the job that wrote the table)")
    elif len(groups) == 1:
        commit = next(iter(groups))
        count = f"{len(sources)} input file" + ("s" if len(sources) > 1 else "")
        lines.append(f"- computed by commit `{commit}` (from {count})")
        if commit != writer:
            lines.append(f"- table assembled by commit `{writer}`")
    else:
        lines.append("- **rows come from different commits**:")
        lines += [f"  - `{commit}`: {', '.join(files)}" for commit, files in groups.items()]
        lines.append(f"- table assembled by commit `{writer}`")
    trained = run_commits(sources, runs)
    if len(trained) == 1:
        lines.append(f"- models trained by commit `{next(iter(trained))}`")
    elif trained:
        lines.append("- **models trained by different commits**:")
        lines += [f"  - `{commit}`: {', '.join(systems)}" for commit, systems in trained.items()]
    plateau = plateau_line(sources, runs)
    if plateau:
        lines.append(plateau)
    signatures = collect_signatures(
        {str(s.get("path")): s["signatures"] for s in sources if isinstance(s.get("signatures"), dict)}
    )
    if not signatures:
        lines.append("- sacreBLEU signature: none (no scores in this table)")
    else:
        lines.append("- sacreBLEU signatures:")
        lines += ["  " + line for line in signature_lines(signatures)]
    return lines


def png_commit(path: Path) -> str | None:
    """The commit a PNG figure records in its text chunk (see reporting/figures.py), if any."""
    if path.suffix.lower() != ".png":
        return None
    from PIL import Image

    try:
        with Image.open(path) as image:
            return getattr(image, "text", {}).get(PNG_COMMIT_KEY)
    except OSError as error:
        raise InputError(f"{path}: not a readable PNG ({error}); re-run the rule that drew it") from None


def find_runs(models_dir: Path | None) -> dict[str, dict[str, Any]]:
    """``run.json`` records by their folder under ``models/`` (``runs/<run id>``)."""
    if models_dir is None or not Path(models_dir).is_dir():
        return {}
    runs = {}
    for path in sorted(Path(models_dir).rglob("run.json")):
        document = read_json(path)
        if isinstance(document, dict):
            runs[path.parent.relative_to(models_dir).as_posix()] = {**document, "path": path}
    return runs


def runs_by_system(config: dict[str, Any], runs: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Each scored system (``<experiment>/<pair>/<variant>``) -> the record of the shared run that
    trained it. Runs live in content-addressed folders (``models/runs/<id>``), so the link comes
    from the config as the workflow resolved it (schema defaults filled in, as the report rule
    passes it); a config that does not resolve links nothing."""
    from nmtvariants.config import training_runs
    from nmtvariants.errors import NMTVariantsError

    try:
        trained = training_runs(config)
    except (NMTVariantsError, KeyError, TypeError):
        return {}
    linked = {}
    for run_id, run in trained.items():
        record = runs.get(f"runs/{run_id}")
        if record is not None:
            for experiment, pair, variant in run.users:
                linked[f"{experiment}/{pair}/{variant}"] = record
    return linked


def run_plateau(run: dict[str, Any]) -> dict[str, Any] | None:
    """A run's plateau record: from its ``run.json``, or from the ``train_log.csv`` beside it for a
    run trained before run.json recorded it; None when neither says."""
    record = run.get("plateau")
    train_log = Path(run["path"]).with_name("train_log.csv")
    if record is None and train_log.is_file():
        try:
            record = plateau_record(train_log)
        except InputError:
            record = None
    return record or None


def plateau_cells(run: dict[str, Any]) -> str:
    """The valid ppl, last-fifth change and plateau cells of a run's row in Training runs."""
    record = run_plateau(run)
    if not record:
        return "| | not recorded"
    ppl, change, at = record["last_valid_ppl"], record["last_fifth_change"], record["at_plateau"]
    return (
        f"{'' if ppl is None else f'{ppl:.3f}'} | "
        f"{'no validation before it' if change is None else f'{change:.1%}'} | "
        f"{'unknown' if at is None else 'yes' if at else 'no'}"
    )


def link(path: Path, out_dir: Path) -> str:
    return Path(os.path.relpath(path, out_dir)).as_posix()


def build_report(
    results_dir: Path,
    data_dir: Path,
    config: dict[str, Any],
    repo: Path,
    models_dir: Path | None = None,
    hardware: dict[str, Any] | None = None,
    out_dir: Path | None = None,
    manifest: dict[str, Any] | None = None,
) -> str:
    """The markdown text of the report for the tables and figures under ``results_dir``.

    Links are relative to ``out_dir`` (where the report and ``data_manifest.json`` are written;
    default ``results_dir``). ``manifest`` is :func:`data_manifest` of ``data_dir`` if not given.
    """
    results_dir, data_dir = Path(results_dir), Path(data_dir)
    out_dir = Path(out_dir) if out_dir is not None else results_dir
    tables = sorted((results_dir / "tables").rglob("*.md"))
    figures = sorted(
        path for path in (results_dir / "figures").rglob("*") if path.suffix.lower() in FIGURE_SUFFIXES
    )
    digest = config_hash(config)
    host = hardware if hardware is not None else hardware_info()
    runs = find_runs(models_dir)
    trained_by = runs_by_system(config, runs)
    lines = [
        "# nmtvariants report",
        "",
        f"config hash `{digest}` · report written by commit `{git_commit(repo)}` (each table and figure "
        "below names the commits that computed it) · report host: " + format_hardware(host),
        "",
    ]
    if not tables and not figures:
        lines += ["No tables or figures under results/ yet.", ""]
    scored: dict[str, dict[str, Any]] = {}
    for table in tables:
        relative = link(table, out_dir)
        body = table.read_text(encoding="utf-8").strip().splitlines()
        if body and body[0].startswith("# "):
            body[0] = "#" + body[0]  # the table's own title becomes a section
        else:
            body.insert(0, f"## {table.stem}")
        record = read_table_provenance(table)
        lines += [*body, "", f"- source: [{relative}]({relative}) · config `{digest}`"]
        lines += provenance_lines(record, trained_by)
        lines.append("")
        for source in (record or {}).get("sources", []):
            if source.get("signatures"):
                scored.setdefault(str(source["path"]), source)
    for figure in figures:
        relative = link(figure, out_dir)
        data = figure.with_suffix(".csv")
        lines += [f"## Figure: {figure.stem}", "", f"![{figure.stem}]({relative})", ""]
        source = f"- source: [{relative}]({relative})"
        if data.is_file():
            source += f" · data [{link(data, out_dir)}]({link(data, out_dir)})"
        commit = png_commit(figure)
        lines += [source + f" · config `{digest}` · drawn by commit `{commit or 'not recorded'}`", ""]
    lines += ["## Scores and their signatures", ""]
    if scored:
        lines += [
            "| file | system | test set | metric | score | signature | commit |",
            "|---|---|---|---|---|---|---|",
        ]
        for path, source in scored.items():
            commit = describe(source.get("provenance"))
            for metric, signature in sorted(source["signatures"].items()):
                score = source.get("scores", {}).get(metric, "")
                lines.append(
                    f"| {path} | {source.get('system', '')} | {source.get('testset', '')} | {metric} | "
                    f"{score} | `{signature}` | `{commit}` |"
                )
    else:
        lines.append("No table was built from score files with a sacreBLEU signature.")
    lines += ["", "## Training runs", ""]
    if runs:
        lines += [
            "A run is at its plateau when its validation perplexity changed by less than "
            f"{PLATEAU_TOLERANCE:.0%} over the last fifth of its updates; a comparison of runs that are "
            "not ranks how fast they start learning, not which is better.",
            "",
            "| run | updates | stop | valid ppl | change over the last fifth | at plateau | commit |",
            "|---|---|---|---|---|---|---|",
        ]
        for system, run in runs.items():
            lines.append(
                f"| {system} | {run.get('updates', '')} | {run.get('stop_reason', '')} | "
                f"{plateau_cells(run)} | `{describe(run.get('provenance'))}` |"
            )
    else:
        lines.append("No training runs (models/**/run.json).")
    manifest = manifest if manifest is not None else data_manifest(data_dir)
    lines += ["", "## Data checksums", ""]
    if manifest["corpora"]:
        shown = link(out_dir / MANIFEST_NAME, out_dir)
        lines += [
            f"One digest per corpus: sha256 of its files' sorted `<sha256>  <file>` lines. "
            f"Every file's sha256: [{shown}]({shown}).",
            "",
            "| corpus | files | digest |",
            "|---|---|---|",
        ]
        lines += [
            f"| {corpus} | {entry['count']} | `{entry['digest']}` |"
            for corpus, entry in manifest["corpora"].items()
        ]
    else:
        lines.append("No manifests under data/.")
    lines += ["", "## Hardware", "", f"- report written on: {format_hardware(host)}"]
    lines += [
        f"- {link(run['path'], results_dir.parent)}: {format_hardware(run['hardware'])}"
        for run in runs.values()
        if isinstance(run.get("hardware"), dict)
    ]
    lines += [
        "",
        "## Configuration",
        "",
        f"Config hash `{digest}` = first 12 hex digits of sha256 over the resolved config as canonical JSON:",
        "",
        "```json",
        json.dumps(config, sort_keys=True, indent=2, ensure_ascii=False),
        "```",
        "",
    ]
    return "\n".join(lines)


def write_report(out: Path, data_dir: Path, **kwargs: Any) -> Path:
    """Write the report (see :func:`build_report`) to ``out`` and the full data manifest beside it
    (``data_manifest.json``), both atomically."""
    out = Path(out)
    manifest = data_manifest(Path(data_dir))
    manifest_out = out.parent / MANIFEST_NAME
    with atomic_write(manifest_out) as handle:
        json.dump(manifest, handle, indent=1, sort_keys=True, ensure_ascii=False)
        handle.write("\n")
    text = build_report(data_dir=data_dir, out_dir=out.parent, manifest=manifest, **kwargs)
    with atomic_write(out) as handle:
        handle.write(text)
    log.info("wrote %s and %s", out, manifest_out)
    return out
