"""`python -m fudbench.assets CONFIG.yaml`: what to fetch for a profile, where, and the commands."""

import sys

from fudbench.assets.check import main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
