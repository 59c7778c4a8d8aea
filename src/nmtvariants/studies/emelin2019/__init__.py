"""Emelin, Titov & Sennrich (2019), *Widening the representation bottleneck in neural machine
translation with lexical shortcuts*: the shortcut variants against the baseline, layer probes,
similarity, gates and ContraWSD.

The study's rules are in ``rules/studies/emelin2019.smk``. ``tables.py`` builds its tables, ``cli.py``
holds its ``nmtvariants`` commands and ``plan.py`` its planner. Nothing is imported here, so that
running one of the study's commands imports only what that command needs.
"""
