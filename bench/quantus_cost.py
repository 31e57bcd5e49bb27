"""Quantus FaithfulnessCorrelation's cost split into per call and per perturbation run (fudbench.workflow.cost's
QUANTUS_CALL_S, QUANTUS_RUN_S, QUANTUS_WEIGHT), as the `quantus` evaluator calls it: one call per image.

    ./fud python bench/quantus_cost.py [--calls 4]

CPU seconds (time.process_time, one torch thread) per call at nr_runs 10 and 100, on the smoke profile's size
(16 px, a small_cnn of width 8) and the photos profile's (224 px, EfficientNet-Lite0, random weights); the
difference of the two gives the seconds per run, the rest the seconds per call.
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
import torch


def per_call(model, side: int, nr_runs: int, calls: int, subset: int) -> float:
    import quantus

    rng = np.random.default_rng(0)
    x = rng.random((1, 3, side, side), dtype=np.float32)
    a = rng.random((1, 1, side, side), dtype=np.float32)
    y = np.array([0])
    t0 = time.process_time()
    for _ in range(calls):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            metric = quantus.FaithfulnessCorrelation(
                nr_runs=nr_runs, subset_size=subset, disable_warnings=True, display_progressbar=False
            )
            metric(model=model, x_batch=x, y_batch=y, a_batch=a, device="cpu", batch_size=64)
    return (time.process_time() - t0) / calls


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=4)
    args = parser.parse_args()
    torch.set_num_threads(1)
    from fudbench.models.classifiers import SmallCNN

    import importlib.util

    spec = importlib.util.spec_from_file_location("effnet", "examples/photos/efficientnet_lite0.py")
    effnet = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(effnet)
    cases = [
        ("16 px, small_cnn width 8", SmallCNN(n_classes=2, width=8).eval(), 16, 224),
        ("224 px, EfficientNet-Lite0", effnet.build().eval(), 224, 224),
    ]
    for label, model, side, subset in cases:
        few, many = per_call(model, side, 10, args.calls, subset), per_call(model, side, 100, args.calls, subset)
        run = (many - few) / 90
        print(
            f"{label}: {few:.3f} s per call at 10 runs, {many:.3f} at 100: {run * 1e3:.2f} ms per run, "
            f"{(few - 11 * run) * 1e3:.0f} ms per call besides"
        )


if __name__ == "__main__":
    main()
