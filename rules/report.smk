# results/report.md: every table and figure with its provenance (nmtvariants.reporting.report), and
# results/data_manifest.json: every data file's sha256 (the report shows one digest per corpus).
# Cheap, so it runs locally under a cluster profile. The report's own commit is a param, so that a
# new commit re-renders the page; each table shows the commits recorded by the jobs that computed
# it (its <stem>.provenance.json), which a new commit does not change.
import json

from nmtvariants.reporting.report import git_commit
from nmtvariants.reporting.tables import provenance_path


localrules:
    report,
    figure,


rule figure:
    input:
        "results/figures/{study}/{name}.csv",
    output:
        report(
            "results/figures/{study}/{name}.png",
            caption="../workflow/report/figure.rst",
            category="Figures",
            subcategory="{study}",
        ),
    log:
        "logs/figures/{study}/{name}.log",
    wildcard_constraints:
        study="[a-z0-9_]+",
        name=drawn_figure_names(),
    conda:
        "../envs/nmtvariants.yaml"
    threads: 1
    resources:
        mem_mb=input_sized_mb(1000),
        runtime=grown_runtime(10),
    params:
        options=figure_arguments,
    shell:
        "nmtvariants figure --csv {input:q} --output {output:q} {params.options:q} > {log:q} 2>&1"


rule report:
    # Functions, not lists: they are evaluated once every rules file (and every study's
    # registrations of tables and figures) has been read, whatever the include order.
    input:
        tables=lambda wc: all_tables(),
        table_provenance=lambda wc: [str(provenance_path(t)) for t in all_tables()],
        figures=lambda wc: all_figures(),
        # the data manifests are written by the jobs that write these files
        data=lambda wc: statistics_inputs(),
    output:
        report=report(
            "results/report.md",
            caption="../workflow/report/report.rst",
            category="Report",
        ),
        manifest="results/data_manifest.json",
    log:
        "logs/report.log",
    conda:
        "../envs/nmtvariants.yaml"
    threads: 1
    resources:
        mem_mb=input_sized_mb(1000),
        runtime=grown_runtime(10),
    params:
        config_json=json.dumps(config, sort_keys=True),
        commit=git_commit(workflow.basedir),
    shell:
        "nmtvariants report --config-json {params.config_json:q} --out {output.report:q} > {log:q} 2>&1"
