"""Meta-evaluation: which evaluation to trust, measured on ground truths whose order is known.

- families.py: families of explainers of known order (degraded, randomised, scatter pairs), their
  anchors and expected ranks, recovery statistics and agreement between metrics
- order_stats.py, ranks.py, inference.py: a family's known pairs and its recovery statistic; ranks and
  rank correlations; intervals and p-values of bounded means, Holm's adjustment
- gate.py, endpoint.py, claims.py, report_card.py: the family gate, the pre-registered endpoint, the claims
  a run supports, the metric report card
- cue.py, reconstruction.py: the planted cue's ground truth; the reconstruction-distance diagnostic

Used by the workflow's meta rules, by a researcher meta-evaluating her own metric (config/meta.yaml)
and by the studies in studies/. Floor 7: imports the floors below (core ... analysis), never report.
"""
