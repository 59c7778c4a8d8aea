"""Variants compose: one model with several studies' mechanisms beside each mechanism
alone and the baseline (experiments with ``study: composition``).

The study's rules are in ``rules/studies/composition.smk``. ``tables.py`` builds its tables, ``cli.py``
holds its ``nmtvariants`` commands and ``plan.py`` its planner. Nothing is imported here, so that
running one of the study's commands imports only what that command needs.
"""
