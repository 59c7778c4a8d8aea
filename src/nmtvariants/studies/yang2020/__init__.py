"""Yang et al. (2020), *On the sub-layer functionalities of Transformer decoder*: decoder
layouts and depths, reconstruction probes, per-layer alignment (AER) and decoding speed.

The study's rules are in ``rules/studies/yang2020.smk``. ``tables.py`` builds its tables, ``cli.py``
holds its ``nmtvariants`` commands and ``plan.py`` its planner. Nothing is imported here, so that
running one of the study's commands imports only what that command needs.
"""
