# Downloads: mirror first (config `mirror`), then upstream; checksums, retries, atomic extraction.
# One rule per configured corpus, since a corpus's file list comes from the config.

for _name, _corpus in DOWNLOADED_CORPORA.items():

    rule:
        name:
            f"download_{_name}"
        output:
            raw_files(_name),
        log:
            f"logs/download/{_name}.log",
        benchmark:
            f"logs/benchmarks/download/{_name}.tsv"
        conda:
            "../envs/nmtvariants.yaml"
        threads: 1
        resources:
            mem_mb=input_sized_mb(2000),
            runtime=grown_runtime(240),
        params:
            source=as_list(_corpus["source"]),
            dest=f"data/{_name}/raw",
            mirror=["--mirror", config["mirror"]] if config.get("mirror") else [],
        shell:
            measured(
                "nmtvariants download {params.source:q} --dest {params.dest:q} {params.mirror:q} > {log:q} 2>&1"
            )
