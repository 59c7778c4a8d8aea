"""Training first, and before it whatever training waits for (rules/common.smk, TRAINING_PRIORITY).

On two cores the demo's wall time is set by its 18 training runs; the analyses of one run are short and
fill in around the others. Snakemake's greedy scheduler ranks the ready jobs by `priority:` and then by
input size, which without priorities ran the analyses of early runs (large checkpoints) before later
training, and the image features (a small input) last of all. Checked on the default config's real plan:
every job that makes a training input, directly or not, outranks every training job, and every training
job outranks every job that waits for a training run (the analyses, translations and tables).
"""

from __future__ import annotations

from workflow_configs import REPO, dry_run_jobs, snakemake


def test_every_job_training_waits_for_comes_first_and_training_before_the_rest():
    result = snakemake("-n", "-p", "--forceall", "--cores", "2")
    assert result.returncode == 0, result.stderr[-2000:]
    # the greedy scheduler and the re-scheduling span come from the workflow profile, applied to every
    # run in the repository without being named (benchmarks/results/scheduler_overhead.md)
    assert "Using workflow specific profile profiles/default" in result.stdout + result.stderr
    jobs = dry_run_jobs(result.stdout)

    def paths(job: dict[str, str], field: str) -> list[str]:
        return [path for path in job.get(field, "").split(", ") if path]

    maker = {path: index for index, job in enumerate(jobs) for path in paths(job, "output")}
    parents = [{maker[path] for path in paths(job, "input") if path in maker} for job in jobs]
    training = {index for index, job in enumerate(jobs) if job["rule"] == "train"}

    def reach(start: set[int], step: list[set[int]]) -> set[int]:
        found: set[int] = set()
        pending = [near for index in start for near in step[index]]
        while pending:
            index = pending.pop()
            if index not in found:
                found.add(index)
                pending.extend(step[index])
        return found

    children: list[set[int]] = [set() for _ in jobs]
    for index, near in enumerate(parents):
        for parent in near:
            children[parent].add(index)
    upstream, downstream = reach(training, parents), reach(training, children)
    assert len(training) == 18 and len(upstream) > 30 and len(downstream) > 100
    priority = [int(job.get("priority", 0)) for job in jobs]

    def rules(indices: set[int], level: int) -> list[str]:
        return sorted({jobs[index]["rule"] for index in indices if priority[index] == level})

    lowest_upstream = min(priority[index] for index in upstream)
    highest_training = max(priority[index] for index in training)
    assert lowest_upstream > highest_training, rules(upstream, lowest_upstream)
    lowest_training = min(priority[index] for index in training)
    highest_downstream = max(priority[index] for index in downstream)
    assert lowest_training > highest_downstream, rules(downstream, highest_downstream)


def test_no_toy_job_waits_for_two_free_cores_and_a_wmt_corpus_is_still_sharded():
    """On the default config every job asks for one core (beside one-core training, a two-core job
    waits until both cores are free at once); a full-scale config still shards its training corpora."""
    toy = dry_run_jobs(snakemake("-n", "-p", "--forceall", "--cores", "2").stdout)
    assert len(toy) > 300 and not [job for job in toy if int(job.get("threads", 1)) > 1]
    result = snakemake(
        "-n",
        "-p",
        "--forceall",
        "--cores",
        "8",
        "--configfile",
        str(REPO / "experiments" / "emelin2019.yaml"),
    )
    assert result.returncode == 0, result.stderr[-2000:]
    sharded = {
        (job["rule"], "split=train" in job["wildcards"])
        for job in dry_run_jobs(result.stdout)
        if job["rule"] in ("tokenize", "truecase_apply")
        for threads in [int(job.get("threads", 1))]
        if threads == 2
    }
    assert sharded == {("tokenize", True), ("truecase_apply", True)}
