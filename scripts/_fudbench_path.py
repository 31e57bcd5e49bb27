"""Make this checkout's library importable in script jobs (local or cluster).

Snakemake puts scripts/ on sys.path; importing this module puts ../src first,
so jobs always run the library of the workflow they belong to, whatever is
installed in the environment. It also makes an uncaught exception write its
traceback to the job's log file from the first line of the job on, and
registers the config's plug-in evaluators (fudbench.evaluators.use_plugins).
"""

import sys
from pathlib import Path

_SRC = str(Path(__file__).resolve().parents[1] / "src")
if _SRC not in sys.path:
    sys.path.insert(0, _SRC)

# With a job server (./fud run starts one: fudbench.workflow.prefork), the job runs in a
# child of it that has torch & co. imported already; this process only waits and
# exits with the child's status. Without one, the job goes on here.
from fudbench.workflow.prefork import hand_over  # noqa: E402

hand_over(vars(sys.modules["__main__"]))

# An exception before the job's setup_job (an import, reading params) also
# leaves its traceback in the job's log file (fudbench.workflow.jobs; setup_job installs
# the same hook again once the log is opened).
_job = getattr(sys.modules.get("__main__"), "snakemake", None)
if getattr(_job, "log", None):
    from fudbench.workflow.jobs import log_uncaught_exceptions

    log_uncaught_exceptions(_job.log[0], getattr(_job, "rule", "job"))

# Plug-in evaluators of the job's config (EvaluatorSpecs by import path): the
# analysis scores their curves as it scores the registered evaluators'. The
# registry is torch-free (~20 ms to import); use_plugins does nothing without one.
if isinstance(getattr(_job, "config", None), dict):
    from fudbench.evaluators import use_plugins

    use_plugins(_job.config.get("evaluators"), Path(_SRC).parent)
