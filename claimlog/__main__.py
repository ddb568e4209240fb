"""`claimlog init DIR` (or `python -m claimlog init DIR`): a new workshop that passes at once."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from claimlog.declaration import init


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="claimlog", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    new = commands.add_parser(
        "init",
        help="write a new workshop into DIR (a recipe, its log, two claims, a page of text "
        "citing it) and record it on this machine",
    )
    new.add_argument("folder", metavar="DIR", type=Path, help="a new or empty folder")
    args = parser.parse_args(argv)
    try:
        print(init(args.folder))
    except (ValueError, RuntimeError) as error:
        print(f"claimlog init: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
