# The fifth study: a toy study outside the package, listed in a config's `extensions`
# (rules/studies/README.md). Its plug-in (fifth_gate.py) reaches the jobs through NMTV_PLUGINS,
# its planner (fifth_plan.py, importable: Snakemake puts this folder on sys.path) says what its
# one table reads; the shared rules train, decode and score every seed.
from fifth_plan import TABLE, GatePlan

FIFTH_PLAN = GatePlan(config, RUN_OF)

if FIFTH_PLAN.experiments:
    register_table("fifth_study", TABLE)


localrules:
    fifth_study_gate,


rule fifth_study_gate:
    input:
        scores=[entry["scores"] for entry in FIFTH_PLAN.entries()],
        models=[entry["model"] for entry in FIFTH_PLAN.entries()],
    output:
        md=TABLE,
        csv=TABLE.replace(".md", ".csv"),
        provenance=TABLE.replace(".md", ".provenance.json"),
    params:
        entries=FIFTH_PLAN.entries(),
    script:
        "fifth_plan.py"
