"""The "Deviations from the paper" note that each study table carries, written with the table.

A result that differs from a paper's for a reason we know of (another parser, another metric
implementation, other data) must say so where the number is read, not only in a docstring or a
config comment. Each study keeps one registry, a tuple of :class:`Deviation` in its own module (the
text of a deviation lives there and nowhere else), and its table builders pass the deviations that
apply to the table they write to :func:`nmtvariants.reporting.tables.write_table`, which puts them
under the table and records their keys in the provenance record.

A deviation applies to a table when the table's key is one of its ``tables`` and, if it has a
``when``, the builder reports that condition: some deviations hold only for some data or settings
(Japanese targets, untrained image features), which only the builder's inputs or the study's plan
know.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass

HEADING = "**Deviations from the paper**"


@dataclass(frozen=True)
class Deviation:
    """One documented difference from the paper: ``key`` names it (provenance records, tests),
    ``tables`` are the keys of the study's tables whose numbers it affects, ``text`` says what we do
    and what the paper did, ``when`` is the condition a builder must report for it to apply (None:
    always)."""

    key: str
    tables: tuple[str, ...]
    text: str
    when: str | None = None


def check_registry(registry: Sequence[Deviation], tables: Collection[str]) -> None:
    """Raise ValueError on a duplicated key or a table key that is not one of ``tables`` (the study's
    table keys): a misspelt table would silently drop a deviation from the table it concerns."""
    keys = [deviation.key for deviation in registry]
    duplicated = sorted({key for key in keys if keys.count(key) > 1})
    if duplicated:
        raise ValueError(f"deviations: duplicated key(s) {', '.join(duplicated)}")
    for deviation in registry:
        unknown = sorted(set(deviation.tables) - set(tables))
        if unknown or not deviation.tables:
            raise ValueError(
                f"deviation {deviation.key!r}: table(s) {', '.join(unknown) or 'none'} not among "
                f"{', '.join(sorted(tables))}"
            )


def applicable(
    registry: Iterable[Deviation], table: str, conditions: Collection[str] = ()
) -> list[Deviation]:
    """The deviations of ``registry`` that apply to ``table`` under ``conditions``, in registry order."""
    return [
        deviation
        for deviation in registry
        if table in deviation.tables and (deviation.when is None or deviation.when in conditions)
    ]


def deviations_markdown(deviations: Sequence[Deviation]) -> str:
    """The note as markdown: a bold heading (not a ``#`` heading: the report nests table files under
    its own sections) and one bullet per deviation; empty when there is none."""
    if not deviations:
        return ""
    return "\n".join([HEADING, "", *(f"- {deviation.text}" for deviation in deviations)])
