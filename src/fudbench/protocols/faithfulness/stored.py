"""A curve computed once by another job, replayed into an evaluator's records.

Some curves do not depend on the explainer: SRG's R-OMS uses random
superpixel orderings only. The workflow computes them once per model x shard
(rule srg_reference) instead of once per explainer, and each explainer's
evaluate job passes them through this protocol, so its records look exactly
as if it had computed them itself.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import pandas as pd

from fudbench.protocols.base import CurveResult, Protocol, Shard


@dataclass
class StoredCurve(Protocol):
    curve: str
    records: pd.DataFrame  # rows of any curves; those named `curve` are used
    source: str = "stored records"  # named in errors

    needs_attribution: ClassVar[bool] = False

    def evaluate(self, shard: Shard, attribution) -> CurveResult:
        rows = self.records[self.records["curve"] == self.curve]
        ids = shard.ids
        missing = sorted(set(ids) - set(rows["image"].tolist()))
        if missing:
            raise ValueError(
                f"{self.source} holds no {self.curve} records for images {missing[:5]}; "
                f"delete it so that it is recomputed"
            )
        picked = pd.concat([rows[rows["image"] == i] for i in ids], ignore_index=True)
        expected = dict(zip(ids, shard.y.cpu().tolist()))
        stale = sorted({int(i) for i, t in zip(picked["image"], picked["target"]) if expected[int(i)] != int(t)})
        if stale:
            raise ValueError(
                f"{self.source} explains other target classes than this job for images {stale[:5]} "
                f"(was `target` changed?); delete it so that it is recomputed"
            )
        return CurveResult(picked, None)
