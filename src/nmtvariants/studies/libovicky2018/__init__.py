"""Libovický, Helcl & Mareček (2018), *Input combination strategies for multi-source
Transformer decoder*: the four strategies over images or further source languages, adversarial BLEU
and the attention over sources.

The study's rules are in ``rules/studies/libovicky2018.smk``. ``tables.py`` builds its tables, ``cli.py``
holds its ``nmtvariants`` commands and ``plan.py`` its planner. Nothing is imported here, so that
running one of the study's commands imports only what that command needs.
"""
