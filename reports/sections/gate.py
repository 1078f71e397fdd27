"""The gate section: which revision gate to use, prescribed exactly, then the evidence.

It opens with the design question the sweep poses (``gate_design``): a gate that meets
the report's targets at every p0 in the range, checked exactly and by simulation, or what
it would take, with its design frontier (cap against expected pairs when nothing changed
and at the drop). Then the figures (worst-case false revert against p0 per gate, power
against the drop with its reference lines, expected runs against the Wald-Wolfowitz bound
at the achieved error rates), the swept configurations (worst cases naming their
conditions, ranked only when run in every condition), why the SPRT misses its nominal
alpha, and the factors. ``recommendations.json`` is written beside ``index.html``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from procmem_core.gates import make_gate
from reports.canvas import palette, png_bytes
from reports.captions import drawn
from reports.claims import coincide_note
from reports.configs import at_reference, label
from reports.document import Detail, Figure, Section, Table
from reports.evidence import NOISE_Z
from reports.options import SESSIONS_PER_DAY, ReportOptions
from reports.recommend import GateTargets
from reports.sections import report_section
from reports.sections.gate_design import Prescription, designed_label, prescribe
from reports.sections.gate_explain import explain_block
from reports.sections.gate_figures import (
    Refs,
    curve_groups,
    drawn_groups,
    factor_figure,
    frontier_figure,
    oc_figure,
    runs_figure,
    tradeoff_figure,
    tradeoff_groups,
    worst_case_figure,
)
from reports.sections.gate_sweep import (
    gate_rows,
    highlight,
    per_condition_table,
    points_table,
    ranking_blocks,
    sweep_recommendation,
)
from reports.sections.gate_tables import (
    GateRuns,
    efficient_frontier,
    exact_curves,
    gate_runs,
    operating_points,
)
from reports.sections.gate_worst import null_curves, worst_rows
from reports.source import Sweep
from reports.world import world_blocks

FACTOR_NAMES = {
    "at_cap": "cap rule at max_runs",
    "ledger_size": "prior's ledger size (runs)",
    "heterogeneity": "user heterogeneity",
    "concurrent_share": "concurrent share of the prior",
}
PRESCRIBED = "prescribed"
"""How the prescribed gate's label opens (``prescribed_label``)."""


def prescribed_label(p: Prescription) -> str:
    """The prescribed gate's label with the settings that tell it apart from the swept
    ones (issue 30 item 10): ``"prescribed: exact two-sample test, ..., max_runs 185,
    accept level -1.640"``; ``PRESCRIBED`` alone when no gate meets the targets."""
    if p.chosen is None:
        return PRESCRIBED
    level = p.chosen.config.get("accept_level")
    accept = f", accept level {level:.3f}" if level is not None and level > -10 else ""
    return f"{PRESCRIBED}: {designed_label(p.chosen)}{accept}"


def _prescription_blocks(p: Prescription) -> list:
    blocks: list = [p.table()]
    blocks += [t for t in (p.ledger_table(), p.holds_table(), p.share_table()) if t is not None]
    if p.chosen is not None:
        blocks.append(
            Table(
                f"The prescribed gate simulated by the sweep when it ended at its worst p0 "
                f"({p.check['replications'].iloc[0]:,} replications each, seed {p.check_seed}; "
                "the runs in brackets posed the question, they did not run this check): "
                "exact against simulated ± Monte Carlo SE",
                p.check.drop(columns="replications"),
            )
        )
        blocks.extend(_frontier_block(p))
        blocks.append(
            Detail(
                f"recommendations.json beside this report holds the gate: make_gate(**gate) "
                f"rebuilds it ({p.chosen.config}). Reproduce the question: {p.command}"
            )
        )
    else:
        blocks.append(f"Reproduce the question: {p.command}")
    return blocks


def _frontier_block(p: Prescription) -> list:
    """The design frontier of the prescribed family, or else of the first feasible family
    that has one (the two-sample test's)."""
    a = frontier_answer(p)
    if a is None:
        return []
    points = pd.DataFrame([pt.__dict__ for pt in a.frontier])
    bound = a.bound.bound if a.bound is not None else None
    whose = "the prescribed" if a is p.chosen else "this family's chosen"
    whose_family = (
        "the prescribed gate's family" if a is p.chosen else f"the {designed_label(a, cap=False)}"
    )
    ratio = f"; {whose} gate is within {a.bound.ratio:.3f} of it" if a.bound else ""
    return [
        Figure(
            "gate_frontier",
            png_bytes(frontier_figure(points, a.max_runs, bound)),
            f"The design frontier of {whose_family}: for each cap "
            "the configuration meeting both targets at every p0 with the fewest expected "
            "pairs when nothing changed (its accept level searched), exact on the design "
            "grid, worst p0; the horizontal line is the Wald-Wolfowitz lower bound on the "
            f"expected pairs of any test with its chosen gate's error rates{ratio}.",
        )
    ]


def frontier_answer(p: Prescription):
    """The answer whose frontier the section shows (``_frontier_block``), if any."""
    if p.chosen is not None and p.chosen.frontier:
        return p.chosen
    return next((a for a in p.design.answers if a.feasible and a.frontier), None)


LEDGER_KEY = "scenario.ledger_size"


def _any_ledger(rows: pd.DataFrame) -> bool:
    """Whether any run had a ledger (``scenario.ledger_size`` set): without one, every run
    knew p0, and the design question still assumes a ledger
    (``experiments.answers.gate.DEFAULT_LEDGER``), which "ledger_size (p0 known)" hid."""
    col = f"params.{LEDGER_KEY}"
    return col in rows and bool(pd.to_numeric(rows[col], errors="coerce").notna().any())


def _swept(rows: pd.DataFrame, key: str) -> bool:
    """Whether the runs took more than one value of the param ``key``."""
    col = f"params.{key}"
    return col in rows and rows[col].dropna().nunique() > 1


def _figures(sweep, gates: GateRuns, p: Prescription, shown: tuple, colours, refs) -> list:
    extra = {}
    if p.chosen is not None:
        ledger = p.question.ledger if p.question.ledger > 0 else None
        extra[prescribed_label(p)] = (make_gate(**p.chosen.config), ledger)
    curves = null_curves(sweep, gates, shown, extra)
    blocks: list = []
    if not curves.empty:
        blocks.append(
            Figure(
                "gate_worst_case",
                png_bytes(worst_case_figure(curves, colours, refs.alpha)),
                "Exact false revert rate when nothing changed against the prior's true rate "
                "p0, each gate at the condition where its worst case is largest (its ledger "
                "mixed in exactly; triangles: the worst case)"
                + ("; 'prescribed: ...' is the design question's answer" if extra else "")
                + ". A gate whose curve crosses the dotted alpha line misses its target there."
                + coincide_note(curve_groups(curves, "p0", "p_revert")),
            )
        )
    points = operating_points(sweep, gates)
    if points.empty:
        return blocks
    several = gates.rows["condition"].nunique() > 1
    where = f" at condition '{gates.reference_condition}'" if several else ""
    ref = points[(points["condition"] == gates.reference_condition) & points["config"].isin(shown)]
    exact, bounds = exact_curves(sweep, gates, float(points["drop"].max()) * 1.25 + 0.02)
    if not exact.empty:
        exact = exact[exact["config"].isin(shown)]
        bounds = bounds[bounds["config"].isin(shown)] if not bounds.empty else bounds
    blocks.append(
        Figure(
            "gate_oc",
            png_bytes(oc_figure(ref, exact, colours, refs)),
            f"Power against the drop{where}: probability of revert by the true drop (dots "
            "simulated with 95 % Monte Carlo bars, lines each gate's own exact recursion); "
            "reference lines at the false-revert target alpha, the power target 1 - beta and "
            "min_drop." + coincide_note(drawn_groups(ref, exact, "p_revert"), "exact curves"),
            detail=True,
        )
    )
    blocks.append(
        Figure(
            "gate_runs",
            png_bytes(runs_figure(ref, exact, bounds, colours)),
            f"Runs until the gate decides{where}; triangles: the Wald-Wolfowitz lower bound on "
            "the expected runs of any test with the gate's own achieved (exact) error rates, "
            "at p0 and at p0 - min_drop."
            + coincide_note(drawn_groups(ref, exact, "expected_runs"), "exact curves"),
            detail=True,
        )
    )
    blocks.append(points_table(ref, where))
    return blocks


def gate_section(
    sweep: Sweep, targets: GateTargets, sessions_per_day: float = SESSIONS_PER_DAY
) -> Section | None:
    """The prescription, then the figures and the sweep's evidence behind it; sessions
    read as calendar time at ``sessions_per_day``."""
    gates = gate_runs(sweep)
    if gates is None:
        return None
    rows = gate_rows(gates, sweep.param_names)
    conditions = rows["condition"].nunique()
    worst = worst_rows(rows)
    rec = sweep_recommendation(worst, targets, gates.default_label, sessions_per_day)
    worst["frontier"] = efficient_frontier(worst, "false_revert_rate", "missed_regression_rate")
    shown = highlight(rec, worst, list(worst.loc[worst["frontier"], "config"]))
    prescription = prescribe(sweep, targets)
    prescription.sessions_per_day = sessions_per_day
    colours = palette([*rows["config"], prescribed_label(prescription)])
    refs = Refs(targets.false_revert, targets.missed_regression, prescription.question.min_drop)
    how = {k: v for k, v in prescription.reads_how().items() if _swept(gates.rows, k)}
    if not _any_ledger(gates.rows):  # the question still designs at a ledger: say which
        how[LEDGER_KEY] = (
            f"designed at a {prescription.question.ledger}-run ledger, procmem's default, "
            "as every run knew p0; "
        )
    what = "The prescribed gate" if prescription.chosen else "The design question"
    blocks = world_blocks(gates.rows, prescription.reads, what, how=how)
    blocks += _prescription_blocks(prescription)
    blocks += _figures(sweep, gates, prescription, shown, colours, refs)
    blocks += ranking_blocks(rec, worst, targets, conditions)
    blocks.append(
        f"Differences are called beyond the noise when larger than {NOISE_Z:g} standard "
        "errors of the difference."
    )
    if conditions > 1:
        blocks.append(
            Table(
                "Best gate in each swept condition on its own (same targets and rule)",
                per_condition_table(rows, targets, gates.default_label),
            )
        )
    blocks += explain_block(sweep, gates, shown)
    blocks.append(_tradeoff_block(worst, colours, targets, shown))
    for col in [*gates.config_cols, *gates.condition_cols]:
        key = col.split(".")[-1]
        if key in FACTOR_NAMES:
            factor = _factor_block(rows, gates, col, key, colours, shown)
            blocks += [factor] if factor is not None else []
    files = {"recommendations.json": prescription.recommendations()}
    return Section(
        "gates",
        "Revision gates: which gate to use",
        prescription.sentence(),
        blocks,
        files,
        prescription.pick(),
    )


def _tradeoff_block(
    worst: pd.DataFrame, colours: dict, targets: GateTargets, shown: tuple
) -> Figure:
    """Every configuration's worst-case error rates against each other, with the frontier."""
    box = (targets.false_revert, targets.missed_regression)
    return Figure(
        "gate_tradeoff",
        png_bytes(tradeoff_figure(worst, colours, box, shown)),
        "False revert rate against missed regression rate for every configuration (each "
        "its worst case over conditions); the black staircase joins the efficient "
        "frontier, the grey box is the target region."
        + coincide_note(tradeoff_groups(worst), "points", "its own marker"),
        detail=True,
    )


def _factor_block(rows, gates: GateRuns, col: str, key: str, colours, shown) -> Figure | None:
    """Error rates against one factor, other conditions at their reference value; None
    when no shown configuration has an error rate there (no empty figure).

    For a condition (ledger size, heterogeneity) the points are the highlighted gate
    configurations, in their usual colours; for a gate setting (the cap rule) they are
    the configurations without that setting, limited to those of the highlighted ones.
    The caption says only what was drawn (``reports.captions.drawn``).
    """
    t = at_reference(gates, keep=col if col in gates.condition_cols else None)
    if col in gates.config_cols:
        rest = [c for c in gates.config_cols if c != col]
        t = t.assign(config=[label(r, rest, "gate") for _, r in t.iterrows()])
        wanted = {label(r, rest, "gate") for _, r in rows[rows["config"].isin(shown)].iterrows()}
        t = t[t["config"].isin(wanted)]
        cols = palette(t["config"])
    else:
        t = t[t["config"].isin(shown)]
        cols = colours
    metrics = ["false_revert_rate", "missed_regression_rate"]
    if t.empty or not np.isfinite(t[metrics].to_numpy(dtype=float)).any():
        return None
    none_label = "p0 known" if key == "ledger_size" else "none"
    fig = factor_figure(t, col, cols, FACTOR_NAMES[key], none_label)
    seen = drawn(fig)
    caption = (
        f"Effect of the {FACTOR_NAMES[key]} on both error rates, one colour per "
        + ("combination of the other gate settings" if col in gates.config_cols else "gate")
        + " configuration, side by side at each level; other conditions at their reference "
        "value"
        + ("; bars: 95 % Monte Carlo intervals" if seen.bars else "; no Monte Carlo error bar")
        + (
            "; lines join one configuration's points"
            if seen.lines
            else "; categories such as 'p0 known' are not joined by lines"
        )
        + "."
    )
    return Figure(f"gate_factor_{key}", png_bytes(fig), caption, detail=True)


@report_section("gate", order=10)
def _gate_report(sweep: Sweep, options: ReportOptions) -> Section | None:
    return gate_section(sweep, options.gate, options.sessions_per_day)
