"""Protocols: which pixels are removed, in which order, and what is recorded.

    Protocol.run(model, x, y, attribution, imputer, image_ids, seed_key) -> CurveResult

fudbench.protocols.base.Protocol owns the loop (seeds, batches with the
out-of-memory back-off, progress, records, kept samples); each protocol
supplies its work items, masks and reduction.

Grouped by what they measure (faithfulness/, localisation/). Floor 3: imports the floors below
(core, data, models, explainers, imputers).
"""

from fudbench.protocols.base import CurveResult, Protocol  # noqa: F401
from fudbench.protocols.faithfulness.topk import TopKCurve  # noqa: F401

# Also: fudbench.protocols.faithfulness.sensitivity_n.SensitivityN, fudbench.protocols.faithfulness.infidelity.Infidelity,
# road.ROAD, idsds.IDSDS, srg.SRG, ffidelity.FidelityCurve, stored.StoredCurve
