"""The ``ut`` command line."""

from __future__ import annotations

import argparse
import sys

from ..config import ConfigError
from ..models import LoadError
from ..training.trainer import TrainingDiverged
from .demo import add_demo_parser
from .experiments import add_experiment_parsers
from .report import add_report_parser
from .run import add_run_parsers
from .translation import add_translation_parsers


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ut", description="Universal Transformer: train, evaluate and run models "
        "(train / eval / generate / sweep / report / plot, for every task; translate / average / tokenizer for "
        "machine translation; demo: the README's example)."
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    add_run_parsers(commands)
    add_experiment_parsers(commands)
    add_report_parser(commands)
    add_translation_parsers(commands)
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
    except (ConfigError, LoadError) as err:
        print(f"ut: error: {err}", file=sys.stderr)
        return 2
    except TrainingDiverged as err:
        print(f"ut: training diverged: {err}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
