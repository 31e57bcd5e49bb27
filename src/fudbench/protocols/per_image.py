"""The records of a protocol that scores each image once (no curve of steps): one row per image, step 0,
kept 1, removed 0, the protocol's own columns, and the clean image's response (one classifier forward per
image, through the protocol's batches), as every protocol records it."""

from __future__ import annotations

import numpy as np
import pandas as pd

from fudbench.protocols.base import Protocol, Shard, records_frame, sample_response


def clean_response(protocol: Protocol, shard: Shard) -> tuple:
    """(confidence, prediction, energy, l2) of the clean images, numpy arrays per image."""

    def respond(x, y):
        return tuple(sample_response(shard.model(x), y, x, x))[:4]

    return protocol.per_image(shard, respond)


def image_records(curve: str, shard: Shard, response: tuple, seconds: float, **columns) -> pd.DataFrame:
    """One row per image: the shared columns around `columns` (after target), `seconds` per image."""
    n = len(shard.ids)
    confidence, prediction, energy, l2 = response
    return records_frame(
        curve,
        image=np.asarray(shard.ids, np.int64),
        step=np.zeros(n, np.int64),
        kept=np.ones(n),
        removed=np.zeros(n),
        target=shard.y.cpu().numpy(),
        **columns,
        confidence=confidence,
        prediction=prediction,
        energy=energy,
        l2=l2,
        seconds=np.full(n, seconds),
    )
