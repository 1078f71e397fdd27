"""``python -m experiments.design explore``: how many sessions, and which explore rate?

Prints, for each explore rate, the sessions needed to detect ``--lift`` over ``--base``
with ``--power`` at two-sided ``--alpha`` (``procmem_core.ab.planner``: exact binomial
power where the withheld arm is small, the normal approximation elsewhere; the
confidence sequence's power at the horizon with ``--sequential``), the withheld sessions
and the successes forgone, and for ``--horizon`` the rate that minimises sessions times
the cost per session among those that reach the power within it.
"""

from __future__ import annotations

import argparse

from procmem_core.ab.planner import DEFAULT_RATES, Design, ExplorePlan, plan
from procmem_core.errors import ParameterError

HELP = "Sessions needed at each explore rate, successes forgone, and the rate to use."


def _rates(text: str) -> tuple[float, ...]:
    try:
        return tuple(float(x) for x in text.split(","))
    except ValueError:
        raise ParameterError("--rates", text, "comma-separated explore rates") from None


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--lift", type=float, required=True, help="lift to detect (e.g. 0.05)")
    parser.add_argument("--base", type=float, default=None, help="success rate when withheld")
    parser.add_argument(
        "--world",
        default=None,
        help="a fitted world.json (python -m experiments.analyze): the base rate is the "
        "worst of 200 draws of its fitted withheld success rate (instead of --base)",
    )
    parser.add_argument("--power", type=float, default=0.8, help="target power (0.8)")
    parser.add_argument("--alpha", type=float, default=0.05, help="two-sided level (0.05)")
    parser.add_argument(
        "--sequential", action="store_true", help="read with the confidence sequence (cs_aipw)"
    )
    parser.add_argument("--horizon", type=int, default=None, help="sessions available")
    parser.add_argument(
        "--tuning", type=int, default=None, help="sessions the sequence is tuned for (horizon)"
    )
    parser.add_argument(
        "--rates", type=_rates, default=DEFAULT_RATES, help="explore rates, comma-separated"
    )


def number(x: float, digits: int = 3) -> str:
    """A number for reading: thousands separated, ``digits`` significant figures."""
    if abs(x) >= 1000:
        return f"{x:,.0f}"
    return f"{x:.{digits}g}"


def describe(p: ExplorePlan) -> list[str]:
    """The plan as lines of text: the question, one row per rate, the answer."""
    d = p.design
    read = (
        "the normal-mixture confidence sequence on AIPW pseudo-outcomes (cs_aipw), power "
        "of reading it at the last session"
        if p.sequential
        else "difference in means with Newcombe's interval, read once at the end"
    )
    lines = [
        f"Detect a lift of {d.lift:g} over a base rate of {d.base:g} with power {d.power:g} at"
        f" two-sided alpha {d.alpha:g} ({read}).",
        "",
    ]
    head = ["explore rate", "sessions needed", "withheld", "successes forgone", "how (sessions)"]
    if p.horizon is not None:
        head.insert(4, f"power at {number(p.horizon)} sessions")
    rows = []
    for r in p.rates:
        row = [f"{r.explore_rate:g}", number(r.sessions), number(r.withheld), number(r.forgone)]
        if p.horizon is not None:
            row.append(f"{r.power_at_horizon:.3f}")
        rows.append([*row, r.method])
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(head)]
    lines.append("  ".join(h.rjust(w) for h, w in zip(head, widths, strict=True)))
    lines += ["  ".join(c.rjust(w) for c, w in zip(r, widths, strict=True)) for r in rows]
    lines += ["", _answer(p)]
    return lines


def _answer(p: ExplorePlan) -> str:
    if p.pick is None:
        best = max(p.rates, key=lambda r: r.power_at_horizon or 0.0)
        return (
            f"No listed explore rate reaches power {p.design.power:g} within "
            f"{number(p.horizon)} sessions; the highest power there is "
            f"{best.power_at_horizon:.3f}, at explore rate {best.explore_rate:g}."
        )
    r = p.pick
    where = f"within {number(p.horizon)} sessions" if p.horizon is not None else "(no horizon)"
    return (
        f"Use explore rate {r.explore_rate:g}: {number(r.sessions)} sessions "
        f"({number(r.withheld)} withheld), {number(r.forgone)} successes forgone, the fewest "
        f"among the listed rates that reach power {p.design.power:g} {where}."
    )


def world_base(path: str, lift: float, seed: int = 0) -> tuple[float, str]:
    """The worst base rate among 200 bootstrap draws of a fitted world's withheld success
    rate (``world_bases``; the largest ``p1 q1 + p0 q0``: the most sessions), and a
    sentence saying so."""
    import numpy as np

    from experiments.analyze.world_file import load_world, world_bases
    from procmem_core.logs.prescribe import DRAWS
    from procmem_core.logs.world import withheld_rate

    world = load_world(path)
    ms = world_bases(world, seed)
    ms = ms[(ms + lift >= 0) & (ms + lift <= 1)]
    if ms.size == 0:
        raise ParameterError("--lift", lift, "a lift that keeps base + lift in [0, 1]")
    v = (ms + lift) * (1 - ms - lift) + ms * (1 - ms)
    base = float(ms[np.argmax(v)])
    m = withheld_rate(world)
    return base, (f"Base rate {base:.3f}: the worst of {DRAWS} draws from {path} (fitted "
                  f"withheld success rate {m.value:.3f} +- {m.se:.3f}).")  # fmt: skip


def run(args: argparse.Namespace) -> int:
    if (args.base is None) == (args.world is None):
        raise ParameterError("--base", args.base, "exactly one of --base and --world")
    base = args.base
    if args.world is not None:
        base, sentence = world_base(args.world, args.lift)
        print(sentence)
    design = Design(args.lift, base, args.power, args.alpha)
    p = plan(design, args.rates, args.horizon, args.sequential, args.tuning)
    print("\n".join(describe(p)))
    if args.world is not None and args.horizon is not None:
        print("\n" + world_prescription(args.world, args.lift, args.horizon, args.power,
                                        args.alpha))  # fmt: skip
    return 0


def world_prescription(path: str, lift: float, horizon: int, power: float, alpha: float) -> str:
    """The analysis's explore-rate prescription for the fitted world (``procmem_core.logs.
    prescribe.explore_rate``: the smallest rate whose sessions fit the horizon at the
    worst bootstrap draw of every fitted parameter, the design effect of its users and
    its missing ratings included, else what it would take)."""
    from experiments.analyze.world_file import load_world, world_parameter_draws
    from procmem_core.logs.prescribe import explore_rate, inflation

    world = load_world(path)
    drawn = world_parameter_draws(world)
    return explore_rate(drawn["base"], lift, horizon, power, alpha,
                        inflate=inflation(world, drawn)).sentence  # fmt: skip
