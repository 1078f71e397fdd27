"""``python -m experiments.design <question> [options]``: see ``experiments.design``."""

from __future__ import annotations

import argparse
import sys

from experiments.design import questions
from procmem_core.errors import ProcmemError


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m experiments.design",
        description="Exact design questions: how many runs, sessions or what rule it takes.",
    )
    sub = p.add_subparsers(dest="question", required=True, metavar="question")
    for name, module in questions().items():
        q = sub.add_parser(name, help=module.HELP, description=module.HELP)
        module.add_arguments(q)
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        return int(questions()[args.question].run(args))
    except ProcmemError as exc:  # bad input: one line naming the option, before any work
        print(f"python -m experiments.design {args.question}: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
