"""``python -m experiments.design rule``: which flat rule meets keep/exclude targets.

Example: ``python -m experiments.design rule --helpful-lift 0.10 --harmful-lift -0.10
--base 0.6 --keep 0.9 --exclude 0.9 --within 30``. Every figure is exact
(``procmem_core.flat.design.design_rule``: a grid over each family's parameters,
threshold and initial confidence); nothing is sampled.
"""

from __future__ import annotations

import argparse
import math

import numpy as np

from procmem_core.errors import ParameterError, check_choice
from procmem_core.flat import FLAT_RULES
from procmem_core.flat.design import (
    OBJECTIVES,
    DesignedRule,
    RuleDesign,
    RuleTargets,
    design_rule,
)

HELP = (
    "which flat rule (reward, penalty, threshold, initial; or the baseline-relative and "
    "posterior rules) keeps helpful procedures and excludes harmful ones within a horizon"
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    d = RuleTargets()
    for flag, kind, default, text in (
        ("--helpful-lift", float, d.helpful_lift, "lift of a helpful procedure"),
        ("--harmful-lift", float, d.harmful_lift, "lift of a harmful one (below helpful)"),
        ("--base", float, None, f"the task's success rate without the procedure ({d.base:g})"),
        ("--keep", float, d.keep, "share of helpful procedures to keep, in (0, 1)"),
        ("--exclude", float, d.exclude, "share of harmful ones to exclude, in (0, 1)"),
        ("--within", int, d.within, "horizon in sessions (>= 1)"),
        ("--family", str, "all", "confidence, baseline, posterior or all"),
        ("--frontier", int, 8, "frontier rows to print per family"),
        (
            "--objective",
            str,
            "exposure",
            "pick among rules meeting both targets: exposure "
            "(fewest sessions a harmful one is shown) or margin (largest smaller margin)",
        ),
    ):
        parser.add_argument(flag, type=kind, default=default, help=text)
    parser.add_argument(
        "--world",
        default=None,
        help="a fitted world.json (python -m experiments.analyze): design at its withheld "
        "success rate (the shown rates' mean less the lifts' mean) and check at the worst "
        "bootstrap draws (procmem_core.logs.prescribe.flat_rule), instead of --base",
    )
    parser.add_argument(
        "--separating",
        action="store_true",
        help="only rules whose break-even lies between the two success rates",
    )


def families(choice: str) -> list[str]:
    """The rule families to design: one by name, or every family with a design grid."""
    if choice != "all":
        FLAT_RULES.get(choice, "family")
        return [choice]
    out = []
    for name, cls in FLAT_RULES.items():
        try:
            cls.design_grid(0.5)
        except ParameterError:
            continue
        out.append(name)
    return sorted(out, key=lambda n: (n != "confidence", n))


def run(args: argparse.Namespace) -> int:
    if args.world is not None and args.base is not None:
        raise ParameterError("--base", args.base, "at most one of --base and --world")
    world = None
    if args.world is not None:
        from experiments.analyze.world_file import load_world

        world = load_world(args.world)  # refused before any work
    base = RuleTargets().base if args.base is None else args.base
    if world is not None:
        from procmem_core.logs.prescribe import targets_at
        from procmem_core.logs.world import withheld_rate

        base = targets_at(RuleTargets(args.helpful_lift, args.harmful_lift, 0.5),
                          withheld_rate(world).value).base  # fmt: skip
    targets = RuleTargets(
        args.helpful_lift, args.harmful_lift, base, args.keep, args.exclude, args.within
    )  # checked before any work
    check_choice("objective", args.objective, OBJECTIVES)
    names = families(args.family)
    if args.frontier < 0:
        raise ParameterError("frontier", args.frontier, "a number of rows >= 0")
    if world is not None:
        return run_world(args, world, targets, names)
    print(
        f"Targets: {targets.describe()} (applied, a helpful procedure succeeds with "
        f"{targets.p_helpful:g}, a harmful one with {targets.p_harmful:g}). Exact, nothing sampled."
    )
    design = None
    for name in names:
        design = design_rule(targets, name, args.separating, args.objective)
        print()
        print("\n".join(report(design, args.frontier)))
    ref = design.reference
    print(f"\nThe seed's rule ({ref.describe()}): {_figures(ref, targets)}")
    print(f"    {_beyond(ref, targets)}")
    return 0


def run_world(args: argparse.Namespace, world: dict, targets: RuleTargets,
              names: list[str]) -> int:  # fmt: skip
    """``--world``: per family, the analysis's flat-rule prescription (designed at the
    fitted base, checked exactly at the lowest and highest bootstrap draws:
    ``procmem_core.logs.prescribe.flat_rule``), then the design at the fitted base."""
    from experiments.analyze.world_file import world_bases
    from procmem_core.logs.prescribe import DRAWS, flat_rule
    from procmem_core.logs.world import withheld_rate

    bases = world_bases(world)
    b = withheld_rate(world)
    print(
        f"World {args.world}: withheld success rate {b.value:.3f} +- {b.se:.3f} (the shown "
        f"rates' mean less the lifts' mean); designed at base {targets.base:g}, checked at the "
        f"lowest ({bases.min():.3f}) and highest ({bases.max():.3f}) of {DRAWS} bootstrap "
        f"draws. Targets: {targets.describe()}."
    )
    for name in names:
        found = flat_rule(b.value, bases, targets, name, args.separating, args.objective)
        print()
        print(f"{name}: {found.sentence}")
        print(f"The design at the fitted base {targets.base:g} (before the draws):")
        print("\n".join(report(found.details["design"], args.frontier)))
    return 0


def _figures(d: DesignedRule, targets: RuleTargets) -> str:
    keep_short, excl_short = d.shortfall(targets)
    kept = f"keeps {d.kept:.3f}"
    if keep_short:
        kept += f" (short of {targets.keep:g} by {keep_short:.3f})"
    excl = f"excludes {d.excluded:.3f}"
    if excl_short:
        excl += f" (short of {targets.exclude:g} by {excl_short:.3f})"
    return f"{kept}, {excl}; a harmful one is shown {d.harmful_sessions:.1f} sessions on average"


def _beyond(d: DesignedRule, targets: RuleTargets) -> str | None:
    """What the rule does past the horizon: its break-even and mean run lengths."""
    base = targets.base if d.rule.needs_baseline else None
    be = d.rule.break_even_rate(base)
    text = f"break-even success rate {be:.3f}"
    if not math.isnan(d.helpful_run_length):
        text += (
            f"; without a horizon a helpful one is lost after {d.helpful_run_length:,.1f} sessions"
            f" on average, a harmful one after {d.harmful_run_length:,.1f}"
        )
    if not targets.p_harmful < be < targets.p_helpful:
        text += (
            f"; it does not separate them in the long run (break-even outside "
            f"{targets.p_harmful:g}-{targets.p_helpful:g}; --separating leaves such rules out)"
        )
    return text


def thin(
    frontier: tuple[DesignedRule, ...], rows: int, targets: RuleTargets | None = None
) -> list[DesignedRule]:
    """At most ``rows`` frontier points, evenly spread along the frontier's length in
    (kept, excluded), with the point nearest the targets' corner among them."""
    if rows <= 0 or not frontier:
        return []
    if len(frontier) <= rows:
        return list(frontier)
    xy = np.array([(d.kept, d.excluded) for d in frontier])
    arc = np.concatenate(([0.0], np.cumsum(np.hypot(*np.diff(xy, axis=0).T))))
    marks = np.linspace(0.0, arc[-1], rows)
    picked = {int(np.argmin(np.abs(arc - m))) for m in marks}
    if targets is not None:
        picked.add(int(np.argmin(np.hypot(xy[:, 0] - targets.keep, xy[:, 1] - targets.exclude))))
    return [frontier[j] for j in sorted(picked)]


def report(design: RuleDesign, rows: int = 8) -> list[str]:
    """The lines printed for one family."""
    t = design.targets
    lines = [f"{design.family} rule ({design.candidates:,} candidates, exact):"]
    if design.skipped:
        lines.append(f"  ({design.skipped} members left out: their grid is too fine for a chain)")
    if design.feasible:
        lines.append(f"  meets both within {t.within} sessions: {design.pick.describe()}")
    else:
        lines.append(
            f"  none meets both within {t.within} sessions; closest: {design.pick.describe()}"
        )
    lines.append(f"    {_figures(design.pick, t)}")
    lines.append(f"    {_beyond(design.pick, t)}")
    if not design.feasible:
        if design.shortest is None:
            lines.append(f"  no rule of the grid meets both within {4 * t.within} sessions either")
        else:
            n, d = design.shortest
            lines.append(
                f"  shortest horizon at which one meets both: {n} sessions: {d.describe()} "
                f"(keeps {d.kept:.3f}, excludes {d.excluded:.3f})"
            )
    shown = thin(design.frontier, rows, t)
    if shown:
        lines.append(
            f"  frontier within {t.within} sessions: share of helpful kept, of harmful excluded,"
            " sessions a harmful one is shown (no rule of the grid does better on both shares)"
        )
        lines.append("    kept  excluded  harmful shown  rule")
        for d in shown:
            lines.append(
                f"    {d.kept:4.3f}  {d.excluded:8.3f}  {d.harmful_sessions:13.1f}  {d.describe()}"
            )
    return lines
