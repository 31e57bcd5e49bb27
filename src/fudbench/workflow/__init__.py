"""Running the workflow's jobs: everything between `./fud run` and a script job's result.

- command.py: `./fud run|snakemake|report`: config files checked, the cost estimate, then Snakemake;
  report_run.py: which run `./fud report` reports, and the command of each other run
- snakemake_main.py, prefork.py, jobs.py: Snakemake with one scheduler fix; the pre-forked job server;
  a script job's set-up (logging, the config, the server hand-over)
- pipeline.py: the job-level functions the scripts call (explain a shard, evaluate a shard, the gallery)
- work_cache.py: the content-keyed cache of per-explainer evaluation work
- preflight.py, cost.py, progress.py, invocations.py: checks before any job; the cost estimate; the
  progress line; the invocation log

Floor 9: imports every floor below; only fudbench.api (floor 10) imports it.
"""
