"""Relations the smoke run's tables must satisfy whatever its seed
(fudbench.report.sanity.run_consistency on the session's smoke run).

The smoke models are trained for one epoch on 128 images of 16 px and are at
chance level (e.g. CNN test accuracy 0.25 of 4 classes), so nothing that needs
a working model is asserted here: the degraded IG family is ordered by 9 of 29
metrics on the CNN and by 4 on the ViT in one such run, so "in order under at
least one metric" could flip with the seed, and the smoke config has neither
the ground-truth mask nor the random map. Those relations are checked on the
default run (tests/test_default_run.py). What is checked here holds by
construction:
- each .tex shows its CSV's numbers (mean and half-width, to the digits
  shown) and arrows; bold marks the best entry of each quality column;
- values in their ranges (AUCs of probabilities, correlations, rates);
- SRG = MRG + LRG; Table 8's CSV = Table 2's; the FUD rows of Tables 11 and
  9 = those of Tables 2 and 3 (same samples, same bootstrap seeds);
- the meta-evaluation's macro Spearman = the score tables' ranking of the
  degraded family;
- ig_d00 (IG with 0% noise: the same pixel ranking) scores exactly as ig
  under the evaluators with deterministic, ranking-only fills.
"""

import pytest

from fudbench.report import sanity
from fudbench.config.files import resolve_config

pytestmark = pytest.mark.workflow


def test_smoke_tables_are_consistent(smoke_run, repo):
    results, _ = smoke_run
    tables = results / "tables"
    cfg = resolve_config([repo / "config/smoke.yaml"])
    assert set(sanity.KINDS) <= set(sanity.table_names(tables)), "a table the checks know is missing"
    problems = sanity.run_consistency(tables, cfg)
    assert not problems, "\n".join(problems)


def test_smoke_p0_copy_is_compared_on_ranking_only_metrics(smoke_run):
    """The p = 0 relation is not vacuous: the smoke run has the metrics it compares."""
    results, _ = smoke_run
    present = set(sanity.score_means(results / "tables")["metric"])
    assert {"Insertion", "Deletion", "Distill blur", "Gevaert del. constant"} <= present
