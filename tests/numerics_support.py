"""Comparing numbers that two computations batch differently (issue 56).

A test must pass on every CPU kind this project meets (AMD AVX2-only, AMD AVX512-BF16, Intel with
AMX): MKL's and oneDNN's kernels choose their blocking, accumulation order and instruction set by
batch size, thread split, memory layout and CPU, so the same image scored in a batch of 8 and in a
batch of 4 may differ in the last float32 bits (an Intel Xeon's do; AMD's happen not to). So:
- bit equality only where both sides run the same ops on the same shapes (a cache hit, a replay of
  the same batches, a seeded draw, a copy, integers), or where the test makes both sides batch alike;
- elsewhere these tolerances, far below anything a result could show: tests/test_default_run.py
  allows 1e-3 on a table cell, and a seeding or ordering bug moves a record by 1e-2 or more.
`tools/cpu_kinds.sh` runs the tests marked `numerics` under each CPU kind's instruction-set cap.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

# Records (confidence, energy, l2 and what the protocols derive from them: correlations, infidelity,
# fidelity, scores): float32 logits of the same image in another batch differ by a few units of the
# last place (~1e-7 relative); 1e-5 relative (~100 float32 units) leaves room for the protocols'
# arithmetic on top, atol for values near 0.
RECORDS = {"rtol": 1e-5, "atol": 1e-6}
# Kept samples are stored as float16 (spacing 2**-11 = 4.9e-4 in [0.5, 1)): a fill that differs in the
# last float32 bits can round to the neighbouring float16; 2e-3 allows a few of those units, as
# tests/test_pipeline.py's shard-invariance check does.
SAMPLES = {"rtol": 0.0, "atol": 2e-3}


def assert_records_close(got: pd.DataFrame, want: pd.DataFrame, **kwargs) -> None:
    """Records of two runs that batch differently: float columns within RECORDS, NaN where the other has
    NaN; every other column (ids, steps, predictions, flags, names) exactly (pandas' check_exact=False
    would let integers differ by the relative tolerance too)."""
    assert list(got.columns) == list(want.columns), (list(got.columns), list(want.columns))
    floats = [c for c in got.columns if pd.api.types.is_float_dtype(got[c])]
    pd.testing.assert_frame_equal(got.drop(columns=floats), want.drop(columns=floats), check_exact=True)
    pd.testing.assert_frame_equal(got[floats], want[floats], check_exact=False, **{**RECORDS, **kwargs})


def assert_samples_close(got, want) -> None:
    """Kept float16 samples of two runs that batch differently: within SAMPLES, NaN where the other has NaN."""
    assert (got is None) == (want is None)
    if got is not None:
        assert np.shape(got) == np.shape(want)
        np.testing.assert_allclose(np.asarray(got, np.float32), np.asarray(want, np.float32), equal_nan=True, **SAMPLES)
