"""Scheduling priorities of the rules (docs/performance.md, "Scheduling"):
read from rules/*.smk, so a renamed evaluator or a gate rule that lost its
priority fails here instead of silently making the default run longer."""

from __future__ import annotations

import ast
import re

from fudbench.evaluators import EVALUATORS


def _priorities(repo) -> dict[str, str]:
    """{rule: its `priority:` expression} over rules/*.smk."""
    found = {}
    for smk in sorted((repo / "rules").glob("*.smk")):
        rule = None
        for line in smk.read_text().splitlines():
            m = re.match(r"\s*rule (\w+):", line)
            if m:
                rule = m.group(1)
            m = re.match(r"\s*priority:\s*(.+?)\s*(#.*)?$", line)
            if m and rule:
                found[rule] = m.group(1)
    return found


def _long_evaluate_priority(repo) -> dict[str, int]:
    text = (repo / "rules/evaluate.smk").read_text()
    m = re.search(r"^LONG_EVALUATE_PRIORITY = (\{.*\})$", text, re.M)
    assert m, "rules/evaluate.smk defines LONG_EVALUATE_PRIORITY"
    return ast.literal_eval(m.group(1))


def test_long_evaluate_priorities_name_registered_evaluators(repo):
    long = _long_evaluate_priority(repo)
    assert {"fud", "ffid"} <= set(long), "the two longest evaluate jobs of the default run go first"
    assert set(long) <= set(EVALUATORS), f"not registered evaluators: {sorted(set(long) - set(EVALUATORS))}"
    assert long["fud"] > long["ffid"] > 0  # FUD's jobs are the longest
    assert "LONG_EVALUATE_PRIORITY.get(" in _priorities(repo)["evaluate"]


def test_gates_run_before_the_jobs_that_wait_for_them(repo):
    prio = _priorities(repo)
    explain = int(prio["explain"])
    long = _long_evaluate_priority(repo)
    for gate in ("train_classifier", "verify_classifier", "verify_surrogate", "verify_score_model"):
        assert gate in prio, f"rule {gate} has no priority: it may be scheduled behind short jobs"
        assert int(prio[gate]) > max(explain, *long.values()), gate
