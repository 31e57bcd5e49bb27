#!/usr/bin/env bash
# GPU acceptance suite: run once on a new GPU node (under 8 minutes planned on an H100 / H200).
#
#   bench/gpu_suite.sh [--out DIR] [--steps NAME ...] [--time-scale X] [--tiny]
#
# Sampler throughput (10 and 100 DDIM steps; batch 1, 32, auto; eager and compiled), FUD in fp32 vs
# the default precision on the same inputs, explainer cost at 224 px, and the paper profile's DAG end
# to end on stand-in assets (every table and figure; Table 10 naming the GPU). Each step has its own
# time limit. Writes DIR/summary.csv and DIR/summary.md (default DIR: results/gpu_suite/<UTC time>).
# --tiny: the same steps at toy size on a CPU (minutes; the test suite runs it). docs/performance.md,
# "GPU acceptance suite", says what each step measures and what to compare it with.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
exec "$repo/fud" python "$repo/bench/gpu_suite.py" "$@"
