"""``python -m experiments.design gate``: how many runs a revision gate needs.

    python -m experiments.design gate --alpha 0.05 --beta 0.2 --min-drop 0.15 \\
        --ledger 20 [--concurrent 0.5] [--p0-range 0.3 0.95] [--max-runs 150]

For each gate family (``procmem_core.gates.design``): the smallest ``max_runs`` at
which the false-revert rate is at most alpha and the power against ``min_drop`` at least
``1 - beta`` at every p0 in the range (exact, bounded between grid points), the expected
runs of each arm when nothing changed and at the drop, and the gate's parameters; or
"infeasible" with what is feasible instead. ``--json`` prints the answers as JSON.
"""

from __future__ import annotations

import argparse
import json

from procmem_core.errors import ParameterError
from procmem_core.gates.design import DesignQuestion, GateDesign, design_gate

HELP = "smallest max runs per gate family meeting both error targets at every p0 (exact)"
OPTIONS = {
    "alpha": "--alpha",
    "beta": "--beta",
    "min_drop": "--min-drop",
    "ledger": "--ledger",
    "concurrent": "--concurrent",
    "p0_low": "--p0-range",
    "p0_high": "--p0-range",
    "p0_range": "--p0-range",
    "max_runs": "--max-runs",
    "min_runs": "--min-runs",
}
"""``DesignQuestion`` field -> the option that sets it (for one-line errors)."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--alpha", type=float, default=0.05, help="largest false-revert rate")
    parser.add_argument("--beta", type=float, default=0.20, help="largest missed-regression rate")
    parser.add_argument("--min-drop", type=float, default=0.15, help="drop the gate must catch")
    parser.add_argument("--ledger", type=int, default=20, help="runs in the prior's ledger")
    parser.add_argument(
        "--concurrent", type=float, default=0.0,
        help="share of sessions serving the prior while a revision is pending (0: fixed ledger)",
    )  # fmt: skip
    parser.add_argument(
        "--p0-range", type=float, nargs=2, default=(0.3, 0.95), metavar=("LOW", "HIGH"),
        help="range of the prior's true success rate both targets must hold over",
    )  # fmt: skip
    parser.add_argument("--max-runs", type=int, default=150, help="largest cap to consider")
    parser.add_argument("--min-runs", type=int, default=3, help="runs before any decision")
    parser.add_argument("--json", action="store_true", help="print the answers as JSON")


def question(args: argparse.Namespace) -> DesignQuestion:
    """The design question of the command line; a bad value names its option."""
    try:
        return DesignQuestion(
            alpha=args.alpha,
            beta=args.beta,
            min_drop=args.min_drop,
            ledger=args.ledger,
            concurrent=args.concurrent,
            p0_low=args.p0_range[0],
            p0_high=args.p0_range[1],
            min_runs=args.min_runs,
            max_runs=args.max_runs,
        )
    except ParameterError as exc:
        raise ParameterError(OPTIONS.get(exc.field, exc.field), exc.value, exc.allowed) from None


def render(design: GateDesign) -> str:
    """The answers as aligned text, one line per family, then the notes."""
    q = design.question
    lines = [
        f"targets: false revert <= {q.alpha:g}, power >= {1 - q.beta:g} against a drop of "
        f"{q.min_drop:g}, at every p0 in [{q.p0_low:g}, {q.p0_high:g}]; ledger {q.ledger} "
        f"runs; concurrent share {q.concurrent:g}",
        f"{'family':<28}{'answer':<24}{'false revert':>13}{'power':>8}"
        f"{'runs null (rev, prior)':>25}{'runs at drop':>17}",
    ]
    notes = []
    for a in design.answers:
        name = f"{a.family} ({a.design})"
        verdict = f"max_runs {a.max_runs}" if a.feasible else f"infeasible (<= {a.max_runs})"
        lines.append(
            f"{name:<28}{verdict:<24}{a.false_revert:>13.4f}{a.power:>8.3f}"
            f"{a.runs_null[0]:>13.1f}{a.runs_null[1]:>12.1f}"
            f"{a.runs_alt[0]:>9.1f}{a.runs_alt[1]:>8.1f}"
        )
        if a.note:
            notes.append(f"  {name}: {a.note}")
    best = design.feasible
    lines.append("")
    if best:
        lines.append(f"use {best[0].family} ({best[0].design}): make_gate(**{best[0].config})")
    else:
        lines.append("no family meets both targets with the runs available:")
    return "\n".join(lines + notes)


def run(args: argparse.Namespace) -> int:
    design = design_gate(question(args))
    if args.json:
        out = [dict(a.__dict__) for a in design.answers]
        print(json.dumps(out, indent=1, default=float))
    else:
        print(render(design))
    return 0
