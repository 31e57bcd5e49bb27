#!/usr/bin/env bash
# Run by Snakemake inside the fresh fud-torch env (--sdm conda): Quantus asks
# for opencv-python, which would overwrite opencv-python-headless's cv2; its
# other requirements are in torch.yaml, so it is installed without them.
set -euo pipefail
python -m pip install --no-deps quantus==0.6.0
