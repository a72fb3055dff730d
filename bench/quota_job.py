"""Entry point of the quota section's child process: `python -m bench.quota_job '<json job>'`
prints the measurement as JSON (see bench/sections/quota.py)."""

import json
import sys

from .sections.quota import measure

if __name__ == "__main__":
    print(json.dumps(measure(json.loads(sys.argv[1]))))
