# results/report.md: every table and figure with its provenance (nmtvariants.reporting.report).
# Cheap, so it runs locally under a cluster profile. The commit is a param so that a new commit
# (or local edits: "+dirty") refreshes the report -- and nothing else.
import json

from nmtvariants.reporting.report import git_commit


localrules:
    report,


rule report:
    input:
        tables=all_tables(),
    output:
        report(
            "results/report.md",
            caption="../workflow/report/report.rst",
            category="Report",
        ),
    log:
        "logs/report.log",
    conda:
        "../envs/nmtvariants.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    params:
        config_json=json.dumps(config, sort_keys=True),
        commit=git_commit(workflow.basedir),
    shell:
        "nmtvariants report --config-json {params.config_json:q} --out {output:q} > {log:q} 2>&1"
