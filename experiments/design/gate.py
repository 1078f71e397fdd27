"""``python -m experiments.design gate``: how many runs a revision gate needs.

    python -m experiments.design gate --alpha 0.05 --beta 0.2 --min-drop 0.15 \\
        --ledger 20 [--concurrent 0.5] [--p0-range 0.3 0.95] [--max-runs 200] \\
        [--objective null_runs | max_runs | mixed WEIGHT] [--ledger-sizes 0 20 50 100]

For each gate family (``procmem_core.gates.design``): a design at which the false-revert
rate is at most alpha and the power against ``min_drop`` at least ``1 - beta`` at every p0
in the range (exact, bounded between grid points), chosen by the objective (default: the
fewest expected pairs when nothing changed at the worst p0; ``max_runs``: the smallest
cap), the expected runs of each arm when nothing changed and at the drop, and the gate's
parameters; or "infeasible" with what is feasible instead. For the two-sample families it
prints the frontier (cap against expected pairs when nothing changed and at the drop) and
the Wald-Wolfowitz bound at the achieved error rates. ``--ledger-sizes`` adds the chosen
two-sample gate's exact worst cases at those ledger sizes (it recalibrates its levels for
the ledger it sees: ``procmem_core.gates.ledger_profile``). ``--json`` prints the answers
as JSON.
"""

from __future__ import annotations

import argparse
import dataclasses
import json

from procmem_core.errors import ParameterError
from procmem_core.gates.design import DesignQuestion, FamilyAnswer, GateDesign, design_gate
from procmem_core.gates.early_stop import OBJECTIVES
from procmem_core.gates.ledger_profile import ledger_profile
from procmem_core.gates.recalibrate import LedgerLevels
from procmem_core.gates.registry import make_gate

HELP = (
    "each gate family's design meeting both error targets at every p0 (exact), and the pick: "
    "by default the fewest expected pairs when nothing changed (--objective)"
)
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
    "objective": "--objective",
    "weight": "--objective",
    "ledger_sizes": "--ledger-sizes",
}
"""``DesignQuestion`` field -> the option that sets it (for one-line errors)."""
P0_RANGE = (0.3, 0.95)


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
        "--p0-range", type=float, nargs=2, default=None, metavar=("LOW", "HIGH"),
        help="range of the prior's true success rate both targets must hold over (0.3 0.95)",
    )  # fmt: skip
    parser.add_argument(
        "--world", default=None,
        help="a fitted world.json (python -m experiments.analyze): the p0 range is the one "
        "holding every bootstrap draw's rates (procmem_core.logs.prescribe.gate), instead of "
        "--p0-range",
    )  # fmt: skip
    parser.add_argument("--max-runs", type=int, default=200, help="largest cap to consider")
    parser.add_argument("--min-runs", type=int, default=3, help="runs before any decision")
    parser.add_argument(
        "--objective", nargs="+", default=["null_runs"], metavar="KIND",
        help="what to minimise among the designs meeting both targets: null_runs (expected "
        "pairs when nothing changed, the default), max_runs (the cap), or mixed WEIGHT "
        "(WEIGHT x null runs + (1 - WEIGHT) x max_runs, WEIGHT in [0, 1])",
    )  # fmt: skip
    parser.add_argument(
        "--ledger-sizes", type=int, nargs="+", default=(), metavar="N",
        help="ledger sizes at which to show the chosen gate's exact worst cases (it "
        "recalibrates for the ledger it sees)",
    )  # fmt: skip
    parser.add_argument("--json", action="store_true", help="print the answers as JSON")


def objective_of(tokens: list[str]) -> tuple[str, float]:
    """``(kind, weight)`` of ``--objective KIND [WEIGHT]``; bad input names the option."""
    kind, rest = tokens[0], tokens[1:]
    if kind not in OBJECTIVES:
        raise ParameterError("--objective", kind, f"one of {', '.join(OBJECTIVES)}")
    if kind != "mixed":
        if rest:
            raise ParameterError("--objective", " ".join(tokens), f"{kind} takes no weight")
        return kind, 1.0
    if len(rest) != 1:
        raise ParameterError("--objective", " ".join(tokens), "mixed WEIGHT, one number in [0, 1]")
    try:
        weight = float(rest[0])
    except ValueError:
        raise ParameterError("--objective", rest[0], "mixed WEIGHT, a number in [0, 1]") from None
    return kind, weight


def question(args: argparse.Namespace) -> DesignQuestion:
    """The design question of the command line; a bad value names its option."""
    try:
        kind, weight = objective_of(list(args.objective))
        return DesignQuestion(
            objective=kind,
            weight=weight,
            alpha=args.alpha,
            beta=args.beta,
            min_drop=args.min_drop,
            ledger=args.ledger,
            concurrent=args.concurrent,
            p0_low=(args.p0_range or P0_RANGE)[0],
            p0_high=(args.p0_range or P0_RANGE)[1],
            min_runs=args.min_runs,
            max_runs=args.max_runs,
            ledger_sizes=tuple(args.ledger_sizes),
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
    best = design.chosen
    lines.append("")
    if best is not None:
        lines.append(f"use {best.family} ({best.design}): make_gate(**{best.config})")
        lines.append(f"  chosen for the objective {q.goal.label()}; " + sessions(best, q))
    else:
        lines.append("no family meets both targets with the runs available:")
    for a in design.answers:
        lines.extend(frontier_lines(a))
    if best is not None and q.ledger_sizes:
        lines.extend(profile_lines(best, q))
    return "\n".join(lines + notes)


def profile_lines(a: FamilyAnswer, q: DesignQuestion) -> list[str]:
    """The chosen gate's exact worst cases against the ledger size (``ledger_profile``)."""
    gate = make_gate(**a.config)
    if not isinstance(gate, LedgerLevels):
        return ["", f"ledger sizes: {a.family} does not recalibrate per ledger size"]
    out = [
        "",
        f"the chosen gate against the prior's ledger size (p0 in [{q.p0_low:g}, "
        f"{q.p0_high:g}]; designed for {gate.ledger} runs, levels recalibrated per size):",
        f"{'ledger':>8}{'false revert':>14}{'levels kept':>13}{'power':>8}{'pairs null':>12}",
    ]
    for r in ledger_profile(gate, q.ledger_sizes):
        out.append(
            f"{r.ledger:>8}{r.false_revert:>14.4f}{r.false_revert_kept:>13.4f}"
            f"{r.power:>8.3f}{r.runs_null:>12.1f}"
        )
    return out


def sessions(a: FamilyAnswer, q: DesignQuestion) -> str:
    """The sessions a revision takes when nothing changed and at the drop, both arms."""
    share = q.concurrent if q.concurrent > 0 else 0.0
    return (
        f"sessions (revision + prior runs, share {share:g}, worst p0): "
        f"{sum(a.runs_null):.1f} ({a.runs_null[0]:.1f} + {a.runs_null[1]:.1f}) when nothing "
        f"changed, {sum(a.runs_alt):.1f} ({a.runs_alt[0]:.1f} + {a.runs_alt[1]:.1f}) at the drop"
    )


def frontier_lines(a: FamilyAnswer) -> list[str]:
    """The family's frontier (cap against expected pairs) and the Wald-Wolfowitz bound."""
    if not a.frontier:
        return []
    out = [
        "",
        f"frontier, {a.family} ({a.design}): per cap the loosest accept level meeting both "
        "targets on the search grid (expected pairs: worst p0)",
        f"{'max_runs':>10}{'accept_level':>14}{'pairs null':>12}{'pairs at drop':>15}"
        f"{'false revert':>14}{'power':>8}",
    ]
    for p in a.frontier:
        out.append(
            f"{p.max_runs:>10}{p.accept_level:>14.3f}{p.runs_null:>12.1f}{p.runs_alt:>15.1f}"
            f"{p.false_revert:>14.4f}{p.power:>8.3f}"
        )
    if a.bound is not None:
        b = a.bound
        out.append(
            f"Wald-Wolfowitz bound when nothing changed, at the achieved error rates: "
            f"{b.bound:.1f} pairs at p0 {b.p0:.3f}, where the gate takes {b.runs:.1f} "
            f"(ratio {b.ratio:.3f}; largest ratio over p0 {b.worst_ratio:.3f} at "
            f"{b.worst_ratio_p0:.3f})"
        )
    return out


def run(args: argparse.Namespace) -> int:
    if args.world is not None:
        return run_world(args)
    design = design_gate(question(args))
    if args.json:
        out = [dataclasses.asdict(a) for a in design.answers]
        print(json.dumps(out, indent=1, default=float))
    else:
        print(render(design))
    return 0


def run_world(args: argparse.Namespace) -> int:
    """``--world``: the analysis's gate prescription for the fitted world
    (``procmem_core.logs.prescribe.gate`` on ``world_draws``), then the full answer."""
    from experiments.analyze.world_file import load_world, world_draws
    from procmem_core.logs.prescribe import DRAWS
    from procmem_core.logs.prescribe import gate as prescribe_gate

    if args.p0_range is not None:
        raise ParameterError("--p0-range", args.p0_range, "at most one of --p0-range and --world")
    world = load_world(args.world)  # refused before any work
    # the draws set the range (starting above the drop): check the rest at such a range
    low = min(max(P0_RANGE[0], args.min_drop + 0.01), 0.9)
    q = question(argparse.Namespace(**{**vars(args), "p0_range": (low, P0_RANGE[1])}))
    ms, ks = world_draws(world)
    found = prescribe_gate(ms, ks, q)
    design = found.details["design"]
    if args.json:
        out = {"prescription": {"setting": found.setting, "meets": found.meets,
                                "sentence": found.sentence, "draws": DRAWS,
                                "p0_range": [design.question.p0_low, design.question.p0_high]},
               "answers": [dataclasses.asdict(a) for a in design.answers]}  # fmt: skip
        print(json.dumps(out, indent=1, default=float))
    else:
        m = world["rates"]["mean"]
        print(f"World {args.world}: success rates' mean {m.value:.3f} +- {m.se:.3f}; the p0 "
              f"range holds the 5-95 % quantiles of each of {DRAWS} bootstrap draws.")  # fmt: skip
        print(found.sentence)
        print()
        print(render(design))
    return 0
