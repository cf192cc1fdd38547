"""The ``ut`` command line."""

from __future__ import annotations

import argparse
import sys

from .demo import add_demo_parser


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ut", description="Universal Transformer: train, evaluate and run models."
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    add_demo_parser(commands)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 2
    try:
        return int(args.run(args) or 0)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
