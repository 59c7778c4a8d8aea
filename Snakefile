# nmtvariants: from raw corpora to the four studies' tables.
#   snakemake --cores all                                     # the embedded default (config.yaml)
#   snakemake --cores 8 results/tables/<study>/<table>.md     # one table and only what it needs
#   snakemake --cores 8 <study>                               # every table and figure of a study
#   snakemake --profile profiles/slurm --configfile experiments/<paper>.yaml
import sys
from pathlib import Path

from snakemake.utils import min_version, validate

from nmtvariants import fork_server
from nmtvariants.config import check_config, check_experiments, check_streams_made
from nmtvariants.errors import exit_on_error
from nmtvariants.models.variants import add_plugin_files
from nmtvariants.resources import missing_resources_message

min_version("9.0")


# The embedded default, unless a config is named on the command line (--configfile
# experiments/<paper>.yaml replaces it instead of being merged into it).
if not workflow.overwrite_configfiles:

    configfile: "config.yaml"


report: "workflow/report/workflow.rst"


# External studies (rules/studies/README.md): `extensions`, relative to the working directory.
EXTENSIONS = [Path(path).resolve() for path in config.get("extensions", [])]
# A refused config stops here with one line and exit status 2, as the CLI reports it.
with exit_on_error():
    check_config(config, Path(workflow.basedir) / "schemas/config.schema.yaml")
    validate(config, "schemas/config.schema.yaml")
    add_plugin_files(path for path in EXTENSIONS if path.suffix == ".py")
    check_experiments(config.get("experiments", {}))


# Before the first job of a real run (not a dry run): every external resource the enabled experiments
# read (WordNet or Meteor 1.5, ImageNet weights, images, Stanza models, a local mirror), in one line.
# Then, for a run whose jobs run on this machine, the fork server: jobs' `nmtvariants` commands start
# with torch and the other heavy libraries imported (src/nmtvariants/fork_server.py; ~1.5 s of CPU
# less per torch job). NMTV_FORKSERVER=off in the environment runs every command in its own process.
FORK_SERVER = None


onstart:
    global FORK_SERVER
    if missing := missing_resources_message(config):
        print(f"nmtvariants: {missing}", file=sys.stderr)
        sys.exit(2)
    if workflow.local_exec and workflow.is_main_process:
        FORK_SERVER = fork_server.start(Path("logs/fork_server.log"))


# Without the timers' cancelling a run would end up to 5 s after its last job (rules/common.smk).
onsuccess:
    fork_server.stop(FORK_SERVER)
    cancel_rescheduling_timers()


onerror:
    fork_server.stop(FORK_SERVER)
    cancel_rescheduling_timers()


include: "rules/common.smk"
include: "rules/toyworld.smk"
include: "rules/download.smk"
include: "rules/preprocess.smk"
include: "rules/train.smk"
include: "rules/evaluate.smk"
include: "rules/tables.smk"


# One file per study (rules/studies/<paper>.smk), then the external studies' rules files: their
# rules, and their tables, figures and data needs registered with rules/common.smk. Included
# before the report, which lists what they registered.
# A study's plan checks its experiments when its file is included: a refused one stops in one line.
BUILT_IN_RULES = sorted(Path(workflow.basedir, "rules", "studies").glob("*.smk"))
with exit_on_error():
    for _study_rules in BUILT_IN_RULES:

        include: f"rules/studies/{_study_rules.name}"

    for _study_rules in (path for path in EXTENSIONS if path.suffix == ".smk"):

        include: str(_study_rules)


close_registries([path.stem for path in BUILT_IN_RULES])
# The streams a run reads come from its plug-ins' declarations; with every study's rules included,
# each must have a rule that writes it, else stop here naming the experiment, variant and plug-in.
with exit_on_error():
    check_streams_made(
        config,
        RUNS,
        lambda path: any(rule.is_producer(path) for rule in workflow.rules),
    )


include: "rules/report.smk"


rule all:
    default_target: True
    input:
        all_tables(),
        all_figures(),
        all_study_data(),
        "results/report.md",


# `snakemake <study>`: that study's tables, figures and data, and nothing else.
for _study in studies():

    rule:
        name:
            _study
        input:
            study_targets(_study),
