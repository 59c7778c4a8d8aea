"""Each study's tables: ``<paper>.py`` turns the workflow's result files (scores, probe CSVs, AER,
ContraWSD) into the paper's tables, and ``<paper>_cli.py`` exposes them as ``nmtvariants`` commands
(discovered like every ``*_cli`` module) for the study's rules in ``rules/studies/<paper>.smk``.
"""
