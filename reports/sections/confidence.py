"""The flat confidence rule: which rule to use, what it tests, and how full a prompt.

The section opens with the exact design at the report's targets, confirmed (or not) by
the sweep's simulation of the designed rule in the world the design describes
(``confidence_design``); it then explains the break-even and shows it on tasks at two
baselines and under prompt crowding (``confidence_evidence``), and ranks the simulated
rules by their worst world, each cell naming its world (``confidence_worst``). A sweep
with no exact-regime world (the quickstart) opens with the worst-case ranking, which says
so when only one rule was run.
"""

from __future__ import annotations

import pandas as pd

from reports.canvas import png_bytes
from reports.configs import at_reference, label_runs
from reports.document import Figure, Section, Table
from reports.options import ReportOptions
from reports.sections import report_section
from reports.sections.confidence_design import (
    DESIGN_READS,
    beyond_design,
    design_evidence,
    design_table,
    exact_world,
    frontier_table,
    holds_blocks,
    opening,
    seed_sentence,
)
from reports.sections.confidence_evidence import (
    break_even_text,
    crowding_data,
    crowding_text,
    mixed_table,
)
from reports.sections.confidence_runs import (
    ConfidenceRuns,
    arithmetic_note,
    confidence_runs,
    worlds_table,
)
from reports.sections.confidence_worst import rank_worst, worst_by_rule, worst_sentence, worst_table
from reports.sections.rule_figures import (
    frontier_figure,
    heatmap_figure,
    limit_figure,
    trajectory_figure,
)
from reports.source import Sweep, find_param
from reports.world import world_blocks

TITLE = "Confidence rule: which reward, penalty and threshold"


def confidence_section(sweep: Sweep, options: ReportOptions) -> Section | None:
    """Prescription, what the rule tests, crowding, worst cases, grids and trajectories."""
    runs = confidence_runs(sweep)
    if runs is None:
        return None
    worst = worst_by_rule(runs)
    rec = rank_worst(worst, options.target_excluded)
    ranking = worst_sentence(worst, rec, len(runs.worlds), options.target_excluded)
    ev = design_evidence(sweep, runs, options)
    if ev is not None:
        what = f"The designed rule (computed at world {ev.world}'s values)"
        blocks: list = [seed_sentence(ev), *world_blocks(runs.rows, DESIGN_READS, what)]
        blocks += _design_blocks(ev, exact_world(runs))
        blocks += holds_blocks(ev)
    else:
        what = "The ranking of rules by their worst world" if rec is not None else "Each figure"
        blocks = world_blocks(runs.rows, None, what)  # nothing ranked: no ranking to qualify
        blocks.append(_design_hint(sweep, runs, options))
    blocks.append(break_even_text(sweep, runs))
    mixed = mixed_table(sweep, runs)
    if mixed is not None:
        caption = (
            "Tasks at several baselines: each rule beside the seed's (value ± SE; differences "
            "± the SE of the difference)"
        )
        blocks += [mixed[0], Table(caption, mixed[1])]
    blocks += _crowding_blocks(sweep, runs)
    blocks += [
        Table("Worlds (conditions) of this sweep", worlds_table(runs)),
        Table(
            "Each rule at its worst over the worlds it ran in (value ± SE, and the world it "
            "came from); ranks only among rules run in every world",
            worst_table(worst, rec),
        ),
    ]
    if ev is not None:
        blocks.append(ranking)
    blocks += _grid_blocks(sweep)
    blocks += _trajectory_blocks(sweep, runs, ev)
    answer = opening(ev) + beyond_design(ev, runs) if ev is not None else ranking
    return Section("confidence", TITLE, answer, blocks)


def _design_blocks(ev, world_rows: pd.DataFrame) -> list:
    t = ev.targets
    seed = ev.designs["confidence"].reference
    points = [(f, d.pick) for f, d in ev.designs.items()] + [("seed", seed)]
    picks = pd.DataFrame([{"label": f, "kept": d.kept, "excluded": d.excluded} for f, d in points])
    caption = (
        f"Helpful kept against harmful excluded within {t.within} sessions (helpful "
        f"{t.helpful_lift:+g}, harmful {t.harmful_lift:+g} at base {t.base:g}): exact frontier of "
        f"each family ({sum(d.candidates for d in ev.designs.values()):,} rules), the designed "
        f"and seed rules, and the sweep's simulated runs in world {ev.world}; targets dotted."
    )
    fig = frontier_figure(
        frontier_table(ev), picks, world_rows, t.keep, t.exclude, "The rule design frontier"
    )
    return [
        Table(
            f"Designed rules at the targets ({t.describe()}), exact; simulated in world "
            f"{ev.world} where the sweep ran the rule (± SE)",
            design_table(ev),
        ),
        "A rule is designed by an exact search (python -m experiments.design rule): among those "
        "meeting both targets, the one whose harmful procedure is shown the fewest sessions. "
        "'Helpful lost after' is its mean run length without a horizon (Brook-Evans on the "
        "decimal grid; by renewal at the clamps in float arithmetic); a rule whose break-even "
        "lies above the helpful success rate meets the targets only within the horizon. "
        + arithmetic_note(seed.rule),
        Figure("rule_frontier", png_bytes(fig), caption),
    ]


def _design_hint(sweep: Sweep, runs: ConfidenceRuns, options: ReportOptions) -> str:
    """Where the exact design lives when this sweep has no world it describes."""
    r = runs.rows.iloc[0]

    def get(key: str, group: str) -> object:
        col = find_param(sweep.param_names, key, group)
        return None if col is None else r.get(col)

    up, down, base, n = (get("helpful_effect", "users"), get("harmful_effect", "users"),
                         get("base_rate", "users"), get("sessions", "scenario"))  # fmt: skip
    cmd = "python -m experiments.design rule"
    if None not in (up, down, base, n):
        cmd += (
            f" --helpful-lift {up:g} --harmful-lift {-down:g} --base {base:g} --keep "
            f"{options.target_kept:g} --exclude {options.target_excluded:g} --within {int(n)}"
        )
    return (
        "This sweep has no single-procedure world without noise, so no exact design is "
        f"confirmed here; the exact design for one procedure at these numbers: `{cmd}`, and "
        "the confidence_sweep preset simulates it."
    )


def _crowding_blocks(sweep: Sweep, runs: ConfidenceRuns) -> list:
    found = crowding_data(sweep, runs)
    if found is None:
        return []
    world, rows = found
    fig = limit_figure(rows, f"Session success against the prompt's limit (world {world})")
    table = rows.pivot_table(
        index="family_label", columns="limit", values="session_success_rate", aggfunc="first"
    )
    table.columns = [f"limit {int(c)}" for c in table.columns]
    table.index.name = "rule"
    return [
        crowding_text(sweep, world, rows),
        Figure(
            "rule_limit_crowding",
            png_bytes(fig),
            f"Session success rate by the most procedures the prompt holds, per rule (95 % MC "
            f"bars; world {world}); dotted: no procedure, dashed: the oracle that shows only "
            "helpful procedures, as many as pay off under the interference.",
        ),
        Table("Session success rate by rule and limit", table.reset_index()),
    ]


def _grid_blocks(sweep: Sweep) -> list:
    """Heatmaps over reward x penalty when the sweep swept that grid."""
    lab = label_runs(sweep, ("confidence",), "rule", ("helpful_retained", "harmful_excluded"), "")
    keys = {k: find_param(sweep.param_names, k, "rule") for k in ("reward", "penalty", "threshold")}
    if (
        lab is None
        or keys["reward"] not in lab.config_cols
        or keys["penalty"] not in lab.config_cols
    ):
        return []
    ref = at_reference(lab)
    t = ref.rename(columns={keys[k]: k for k in keys if keys[k]})
    t = t.assign(helpful_lost=1.0 - t["helpful_retained"])
    facet = "threshold" if keys["threshold"] in lab.config_cols else None
    out = []
    for value, title, name in (
        ("harmful_excluded", "Share of harmful procedures excluded", "rule_harmful"),
        ("helpful_lost", "Share of truly helpful procedures lost", "rule_helpful_lost"),
    ):
        fig = heatmap_figure(t, "reward", "penalty", value, facet, title, "share (0-1)")
        where = f" at condition '{lab.reference_condition}'" if lab.condition_cols else ""
        caption = (
            f"{title} over the reward x penalty grid{where}; b-e is the break-even success "
            "rate penalty/(reward+penalty)."
        )
        out.append(Figure(name, png_bytes(fig), caption))
    return out


REFERENCE_RATES = {
    "success_rate_no_procedures": "no procedure shown",
    "success_rate_oracle": "oracle (helpful procedures only)",
}
"""Logged per-session success rates drawn beside the rules' trajectories."""


def _trajectory_blocks(sweep: Sweep, runs: ConfidenceRuns, ev) -> list:
    """Session success over time in one world: every rule run there (at most six)."""
    world = ev.world if ev is not None else runs.rows["world"].iloc[0]
    rows = runs.rows[runs.rows["world"] == world].head(6)
    traj = sweep.table("trajectory", list(rows["run_id"]))
    if traj.empty or not {"session", "success_rate"} <= set(traj.columns):
        return []
    names = dict(zip(rows["run_id"], rows["label"], strict=True))
    traj = traj.assign(config=traj["run_id"].map(names))
    wide = traj.pivot_table(index="session", columns="config", values="success_rate")
    if "success_rate_se" in traj:
        se = traj.pivot_table(index="session", columns="config", values="success_rate_se")
        wide = wide.join(se.add_suffix("_se"))
    refs = {
        label: float(rows[metric].mean())
        for metric, label in REFERENCE_RATES.items()
        if metric in rows and rows[metric].notna().any()
    }
    fig = trajectory_figure(
        wide.reset_index(), "session", {str(c): str(c) for c in names.values()},
        "Session success rate over time", "session success rate (probability)", refs,
    )  # fmt: skip
    drawn = f"; lines: {', '.join(refs)}, as logged by the runs (mean over them)" if refs else ""
    return [Figure("rule_success_over_time", png_bytes(fig),
                   f"Session success rate by session in world {world} (bands: 95 % MC "
                   f"intervals), each rule run there{drawn}.")]  # fmt: skip


@report_section("confidence", order=20)
def _confidence_report(sweep: Sweep, options: ReportOptions) -> Section | None:
    return confidence_section(sweep, options)
