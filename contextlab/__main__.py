"""`python -m contextlab preflight ...`: the checks `make run` and `make worker` make before
they start anything (contextlab/preflight.py). Not `python -m contextlab.preflight`: the package
imports that module first (through its Celery app), and running it again as __main__ warns."""

import sys

from contextlab import preflight

if __name__ == "__main__":
    if sys.argv[1:2] != ["preflight"]:
        sys.exit("usage: python -m contextlab preflight port N | broker")
    sys.exit(preflight.main(sys.argv[2:]))
