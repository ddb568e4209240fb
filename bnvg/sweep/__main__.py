"""`python -m bnvg.sweep`: claimlog's sweep of this workshop, from this checkout (see
`python -m bnvg.sweep --help` and docs/sweep.md)."""

import sys
from pathlib import Path

from claimlog.sweep.__main__ import main

if __name__ == "__main__":
    sys.exit(main(project=Path(__file__).resolve().parents[2], prog="python -m bnvg.sweep"))
