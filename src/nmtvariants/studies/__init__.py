"""The studies: one package per study, ``studies/<paper>/``, beside the machinery they share
(:mod:`nmtvariants.studies.plan_base`).

Every study has the same three modules, so that a reader who knows one study can find their way in
any other: ``tables.py`` turns the workflow's result files (scores, probe CSVs, AER, ContraWSD) into
the paper's tables, ``cli.py`` exposes them as ``nmtvariants`` commands (discovered like every stage
module, see :mod:`nmtvariants.cli`), and ``plan.py`` is the study's planner (a
:class:`~nmtvariants.studies.plan_base.StudyPlan`) that its thin rules file
``rules/studies/<paper>.smk`` builds once and asks what to read and write. The package's own
``__init__`` stays empty of imports: a command of one study must not pay for its tables' imports.
"""
