"""Explore rate: how much to withhold, with which estimator, what it costs, and how to read
the experiment while it runs. The choice itself is ``explore_choice``; the figures are
``explore_figures``; numbers are formatted by ``explore_format``."""

from __future__ import annotations

import pandas as pd

from procmem_core.ab import ESTIMATORS
from procmem_core.ab.planner import EXACT_ARM
from reports.canvas import png_bytes
from reports.claims import MEETS, WITHIN_NOISE, Option, ordering, target_state
from reports.configs import Labelled, label_runs, show
from reports.document import Detail, Figure, Section, Table
from reports.evidence import fmt_metric
from reports.options import ReportOptions
from reports.sections import explore_figures as figs
from reports.sections import report_section
from reports.sections.explore_choice import (
    candidates,
    choice_sentence,
    choice_table,
    choose,
    estimators_in,
    online_sentence,
    planner_agreement,
    planner_holds,
    planner_table,
)
from reports.sections.explore_format import readable, with_se
from reports.source import Sweep, find_param
from reports.world import world_blocks

CHOICE_READS = ("users.helpful_share", "users.harmful_share", "users.helpful_effect",
                "users.harmful_effect", "scenario.sessions")  # fmt: skip
"""What ``choose`` picks per: the pool's true lift (set by the users' shares and effects)
and the horizon."""

SEED_EXPLORE_RATE = 0.0
"""Loom's procedure_explore_rate default: nothing withheld, so no control arm at all."""
ANALYSIS_KNOBS = ("estimator", "confidence_level", "target_power", "cs_tuning_sessions")
"""Explore settings that choose how a run is read, not the world: never a lift condition."""
SHOWN_IN_FIGURES = ("dim", "ipw", "aipw", "cuped", "cs_aipw", "cs_aipw_linear")
ONLINE = ("dim", "cs_aipw", "cs_aipw_linear", "cs_ipw", "cs_eb_aipw", "cs_eb_ipw")


def _effective(sweep: Sweep, rows: pd.DataFrame) -> dict[str, pd.Series]:
    """Explore settings as the job used them: ``explore.<k>`` when the explore group was
    selected (it overrides the scenario's own), else ``scenario.<k>``."""
    out = {}
    for name in sweep.param_names:
        parts = name.split(".")
        if len(parts) != 3 or parts[1] != "explore":
            continue
        own = rows[name]
        fallback = rows.get(f"params.scenario.{parts[2]}")
        out[parts[2]] = own if fallback is None else own.where(own.notna(), fallback)
    return out


def _explore_runs(sweep: Sweep) -> Labelled | None:
    lab = label_runs(sweep, ("explore",), "explore", ("power", "exploration_cost"), "explore")
    sessions = find_param(sweep.param_names, "sessions", "scenario")
    if lab is None or sessions is None:
        return None
    settings = _effective(sweep, lab.rows)
    rate = settings.get("explore_rate")
    if rate is None or rate.isna().any():
        return None
    rows = lab.rows.assign(explore_rate=rate.astype(float), sessions=lab.rows[sessions].astype(int))
    reps = find_param(sweep.param_names, "replications", "scenario")
    rows["replications"] = rows[reps].astype(int) if reps else 1
    world = [
        c for c in lab.condition_cols
        if c != sessions and c.split(".")[-1] not in settings and ".explore." not in c
    ]  # fmt: skip
    lift = rows.get("true_lift")
    labels = []
    for i in range(len(rows)):
        head = f"true lift {lift.iloc[i]:.3g}" if lift is not None else "as configured"
        extra = ", ".join(f"{c.split('.')[-1]}={show(rows.at[i, c])}" for c in world)
        labels.append(head + (f" ({extra})" if extra else ""))
    rows["lift_condition"] = labels
    return Labelled(rows, lab.config_cols, world, lab.reference_condition)


def _single_value(rows: pd.DataFrame, estimators: list[str], target: float) -> str | None:
    """The answer when the sweep ran one explore rate and one number of sessions."""
    if rows["explore_rate"].nunique() > 1 or rows["sessions"].nunique() > 1:
        return None
    r = rows.iloc[0]
    ranked = sorted(estimators, key=lambda e: -float(r[f"{e}_power"]))[:3]
    options = [Option(e, float(r[f"{e}_power"]), float(r[f"{e}_power_se"])) for e in ranked]
    powers = ordering(options, show=lambda o: f"{o.name} {with_se(o.value, o.se)}")
    states = {
        target_state(float(r[f"{e}_power"]), float(r[f"{e}_power_se"]), target, True)
        for e in estimators
    }
    if MEETS in states:
        reached = "some reach"
    else:
        reached = "some are within noise of" if WITHIN_NOISE in states else "none reaches"
    return (
        f"Only one explore rate ({readable(r['explore_rate'])}) and one horizon "
        f"({readable(r['sessions'])} sessions) were run, so this sweep cannot say which rate "
        f"to use (the explore_tradeoff preset asks that). At that setting and true lift "
        f"{readable(r['true_lift'])} ({r['run_name']}), the highest simulated powers per "
        "deployment are "
        f"{powers}; {reached} the target {target:g}."
    )


def _coincide(rows: pd.DataFrame, a: str, b: str) -> bool:
    """Whether ``a`` and ``b`` have the same mean estimate in every run where neither is
    ever undefined (there they agree replication by replication or not at all)."""
    cols = [f"{e}_{m}" for e in (a, b) for m in ("estimate", "undefined_rate")]
    if any(c not in rows for c in cols):
        return False
    both = rows[(rows[f"{a}_undefined_rate"] == 0) & (rows[f"{b}_undefined_rate"] == 0)]
    diff = (both[f"{a}_estimate"] - both[f"{b}_estimate"]).abs()
    return not both.empty and bool((diff < 1e-9).all())


def _span(values: pd.Series) -> str:
    lo, hi = values.min(), values.max()
    return readable(lo) if lo == hi else f"{readable(lo)} to {readable(hi)}"


def _choice_blocks(rows: pd.DataFrame, estimators: list[str], options: ReportOptions) -> tuple:
    target = options.target_power
    horizons = [options.target_sessions] if options.target_sessions else None
    cands = candidates(rows, estimators)
    choices = choose(cands, target, horizons)
    if not choices:
        return None, []
    answer = _single_value(rows, estimators, target) or choice_sentence(choices, target)
    online = choose(cands[cands["guarantee"] != "fixed-n"], target, horizons)
    stated = f"horizon {readable(options.target_sessions)}" if horizons else "each swept horizon"
    blocks: list = [
        Table(
            f"Cheapest read reaching power {target:g} per true lift and {stated}: among every "
            "swept explore rate and estimator whose simulated power per deployment at that "
            "horizon reaches the target and whose interval covers there (coverage at least "
            "0.95 - 4 SE), the one forgoing the fewest successes (sessions x explore rate x "
            "lift); per estimator, its smallest qualifying explore rate. Where nothing "
            "qualifies the row shows the most powerful interval that covers. Fixed-n intervals "
            "are read once at the horizon; always-valid ones may be read at any time.",
            choice_table(choices, estimators),
        ),
        online_sentence(online, target),
        f"The seeds' default explore rate is {SEED_EXPLORE_RATE:g}: no session is withheld, "
        "so there is no control arm and the lift cannot be estimated at all (power 0).",
        f"Each point rests on {_span(rows['replications'])} replications (deployments); ± "
        "are Monte Carlo standard errors, figure bars 95 % Wilson intervals.",
    ]
    return answer, blocks


def _planner_blocks(sweep: Sweep, rows: pd.DataFrame, options: ReportOptions) -> list:
    base_col = find_param(sweep.param_names, "base_rate", "users")
    if base_col is None or rows[base_col].nunique() != 1 or "dim_power" not in rows:
        return []
    base = float(rows[base_col].iloc[0])
    level = rows.get("params.explore.confidence_level")
    alpha = 1 - float(level.iloc[0]) if level is not None and level.notna().all() else 0.05
    rates = sorted(rows["explore_rate"].unique())
    table = planner_table(sweep, rows, base, alpha, options.target_power, rates)
    within, cells, worst = planner_agreement(sweep, rows, base, alpha)
    return [
        Table(
            f"The planner's answer (python -m experiments.design explore --base {base:g} "
            f"--lift <lift> --horizon <sessions>) over the swept rates: its pick, the sessions "
            "it needs, its power at the horizon for the difference in means, and the simulated "
            "dim power at that cell.",
            table,
        ),
        Detail(
            f"The planner's power for the difference in means (exact where the withheld arm is "
            f"expected to hold at most {EXACT_ARM} sessions, normal elsewhere) agrees with the "
            f"simulated dim power within 4 SE at {within} of {cells} swept cells (largest "
            f"|z| = {worst:.2f}). It assumes every session succeeds with probability {base:g} "
            f"or {base:g} + lift; the simulated users differ in base rate and in the "
            "procedure's effect on them, which it ignores."
        ),
        *planner_holds(sweep, rows, base, alpha, options.target_power, rates),
    ]


def _estimator_figures(rows: pd.DataFrame, estimators: list[str]) -> list:
    shown = [e for e in SHOWN_IN_FIGURES if e in estimators]
    fixed = [e for e in estimators if ESTIMATORS[e].guarantee == "fixed-n"]
    note = ""
    if _coincide(rows, "dim", "ipw"):
        marks = "curves" if rows["explore_rate"].nunique() > 1 else "points"  # one rate: no line
        note = (
            " dim and ipw give the same point estimate wherever both are defined (a constant "
            f"propensity: Hajek's weights cancel), so their {marks} differ only through their "
            "intervals (Newcombe's vs a sandwich Wald) and nearly coincide."
        )
    top = readable(rows["sessions"].max())
    return [
        Figure(
            "explore_power_by_estimator",
            png_bytes(figs.by_estimator(rows, "power", shown, "power (share of deployments)")),
            f"Power of each estimator against the explore rate at {top} sessions, one panel "
            f"per true lift.{note}",
            detail=True,
        ),
        Figure(
            "explore_coverage",
            png_bytes(
                figs.by_estimator(
                    rows, "coverage", fixed, "coverage of the pool's lift", figs.NOMINAL
                )
            ),
            f"Coverage of each fixed-n estimator's 95 % interval at {top} sessions; dashed: "
            f"the nominal 0.95.{note}",
            detail=True,
        ),
    ]


def _online_blocks(sweep: Sweep, rows: pd.DataFrame) -> list:
    """The confidence sequence over sessions beside the fixed-n interval, and the table of
    reading online at the longest horizon."""
    if "cs_aipw_monitor_miss_rate" not in rows:
        return []
    top = rows[rows["sessions"] == rows["sessions"].max()].copy()
    top["_gap"] = (top["explore_rate"] - 0.1).abs()
    mid = sorted(top["true_lift"].unique())[len(top["true_lift"].unique()) // 2]
    run = top[top["true_lift"] == mid].sort_values("_gap").iloc[0]
    path = sweep.tables.get(run["run_id"], {})
    path = path.get("cs_path") if "cs_path" in path else None
    blocks: list = []
    if path is not None and not path.empty:
        blocks.append(
            Figure(
                "explore_cs_path",
                png_bytes(figs.sequence_path(path, run, list(ONLINE))),
                f"Left: the first deployment of {run['run_name']} (true lift "
                f"{readable(run['true_lift'])}, explore rate {readable(run['explore_rate'])}, "
                f"{readable(run['sessions'])} sessions): the confidence sequences and the "
                "fixed-n interval recomputed after every session (clipped to [-1, 1]). Right: "
                "how often the true lift ever left each when read after every session.",
            )
        )
    blocks.append(Table(_ONLINE_CAPTION, _online_table(top)))
    return blocks


_ONLINE_CAPTION = (
    "Reading while sessions accrue, at the longest horizon: the share of deployments in "
    "which the true lift ever left the interval read after every session (fixed-n vs "
    "sequences; at most 0.05 is the promise), the sequence's width over its fixed-n "
    "counterpart's at the horizon (tuned there), the share where the sequence excluded 0 at "
    "some session (stopping then is valid), sample-ratio flags (p < 0.001) and CUPED's "
    "width reduction with the user's base rate as covariate."
)


def _rate(r: pd.Series, metric: str) -> str:
    """A simulated share ± SE, or "0 of N" where none occurred (its SE formula gives 0)."""
    if float(r[metric]) == 0:
        return f"0 of {readable(r['replications'])}"
    return fmt_metric(r, metric)


def _online_table(top: pd.DataFrame) -> pd.DataFrame:
    out = []
    for _, r in top.sort_values(["true_lift", "explore_rate"]).iterrows():
        out.append(
            {
                "run": r["run_name"],
                "true lift": readable(r["true_lift"]),
                "explore rate": readable(r["explore_rate"]),
                "fixed-n read every session: miss": _rate(r, "dim_monitor_miss_rate"),
                "cs_aipw: miss": _rate(r, "cs_aipw_monitor_miss_rate"),
                "cs_eb_aipw: miss": _rate(r, "cs_eb_aipw_monitor_miss_rate"),
                "cs_aipw width / aipw": fmt_metric(r, "cs_aipw_width_ratio"),
                "cs_aipw_linear width / aipw": fmt_metric(r, "cs_aipw_linear_width_ratio"),
                "cs_aipw: 0 excluded at some session": _rate(r, "cs_aipw_sequential_power"),
                "SRM flagged (fixed / sequential)": f"{_rate(r, 'srm_flag_rate')} / "
                f"{_rate(r, 'srm_sequential_flag_rate')}",
                "CUPED width reduction": fmt_metric(r, "cuped_width_reduction"),
            }
        )
    return pd.DataFrame(out)


def explore_section(sweep: Sweep, options: ReportOptions) -> Section | None:
    """Which explore rate and estimator, per true lift and horizon, with the evidence."""
    lab = _explore_runs(sweep)
    if lab is None:
        return None
    rows = lab.rows
    estimators = estimators_in(sweep.metric_names)
    answer, chosen = _choice_blocks(rows, estimators, options)
    if answer is None:
        return None
    blocks = world_blocks(rows, CHOICE_READS, "The explore rate chosen", exact=False) + chosen
    blocks.append(
        Figure(
            "explore_power_cost",
            png_bytes(figs.power_cost(rows, options.target_power)),
            "Top: power of each run's configured estimator against the explore rate, one line "
            "per number of sessions (dotted: the normal approximation); bottom: successes "
            "forgone. One panel per true lift.",
        )
    )
    blocks += _planner_blocks(sweep, rows, options)
    blocks += _estimator_figures(rows, estimators)
    blocks += _online_blocks(sweep, rows)
    blocks += _confidence_blocks(rows)
    return Section("explore", "Explore rate: how much to withhold", answer, blocks)


def _confidence_blocks(rows: pd.DataFrame) -> list:
    if "confidence_wrong_side_rate" not in rows:
        return []
    blocks: list = [
        Figure(
            "explore_confidence_gap",
            png_bytes(figs.confidence_gap(rows)),
            "The flat confidence score is updated only when the procedure is shown, with no "
            "control: how often it sits on the wrong side of the threshold for the sign of the "
            "procedure's true effect, per true lift.",
            detail=True,
        )
    ]
    if "confidence_lift_correlation" in rows:
        r = rows.sort_values(["sessions", "explore_rate"]).iloc[-1]
        blocks.append(
            f"Across replications, the final confidence score correlates with the pool's true "
            f"lift at r = {fmt_metric(r, 'confidence_lift_correlation')} "
            f"({readable(r['sessions'])} sessions, explore rate {readable(r['explore_rate'])}): "
            "the score is not an estimate of the effect; the withheld-vs-shown comparison is."
        )
    return blocks


@report_section("explore", order=40)
def _explore_report(sweep: Sweep, options: ReportOptions) -> Section | None:
    return explore_section(sweep, options)
