"""Bugliarello & Okazaki (2020), *Enhancing machine translation with dependency-aware
self-attention* (PASCAL): gold parses on the workflow's tokens, the parent-aware variants and their
ablations.

The study's rules are in ``rules/studies/bugliarello2020.smk``. ``tables.py`` builds its tables, ``cli.py``
holds its ``nmtvariants`` commands and ``plan.py`` its planner. Nothing is imported here, so that
running one of the study's commands imports only what that command needs.
"""
