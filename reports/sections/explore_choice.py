"""Which explore rate and estimator to use: what a researcher pays for a trustworthy read.

Over the grid of true lift x horizon (the swept numbers of sessions, or the report's
``--target-sessions``), every (explore rate, estimator) the sweep ran is a candidate;
it qualifies when its simulated power at that horizon reaches the target, and the pick
is the qualifying one that forgoes the fewest successes (``exploration_cost``: withheld
sessions times the pool's lift, i.e. sessions times the cost per session, ``eps * lift``).
Ties go to the lower explore rate, then the higher power. The estimator is a choice in
the table, with its guarantee (fixed-n: read once at the horizon; always-valid: read at
any time). Beside it, the engine's planner (``procmem_core.ab.planner``) answers the same
question from the formula, for the difference in means: asked by the sweep when it ended
(``experiments.answers.explore``) and read here from its ``answers/explore.json``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd

from procmem_core.ab import ESTIMATORS
from procmem_core.ab.planner import EXACT_ARM, RatePlan
from reports.answers import answer
from reports.claims import MEETS, NOISE_Z, WITHIN_NOISE, state_words, target_state
from reports.document import Table
from reports.holds import TITLE as HOLDS_TITLE
from reports.holds import breaks_sentence, holds_table, rows_of, short_of
from reports.sections.explore_format import readable, with_se

NOMINAL = 0.95


def estimators_in(metric_names: tuple[str, ...]) -> list[str]:
    """Registered estimators whose power the sweep logged, fixed-n first."""
    names = [e for e in ESTIMATORS.names() if f"{e}_power" in metric_names]
    return sorted(names, key=lambda e: (ESTIMATORS[e].guarantee != "fixed-n", e))


def candidates(rows: pd.DataFrame, estimators: list[str]) -> pd.DataFrame:
    """One row per (run, estimator): the cell, the power with its SE and the cost."""
    out = []
    for _, r in rows.iterrows():
        for e in estimators:
            out.append(
                {
                    "lift_condition": r["lift_condition"],
                    "true_lift": r.get("true_lift", math.nan),
                    "sessions": int(r["sessions"]),
                    "explore_rate": float(r["explore_rate"]),
                    "estimator": e,
                    "guarantee": ESTIMATORS[e].guarantee,
                    "power": float(r[f"{e}_power"]),
                    "power_se": float(r.get(f"{e}_power_se", math.nan)),
                    "cost": float(r["exploration_cost"]),
                    "cost_se": float(r.get("exploration_cost_se", math.nan)),
                    "valid": _valid(r, e),
                    "run": r.get("run_name", ""),
                }
            )
    return pd.DataFrame(out)


def _valid(r: pd.Series, e: str, nominal: float = NOMINAL) -> bool:
    """Whether ``e``'s interval covers at its level in that cell: coverage at least the
    nominal minus 4 SE (a fixed-n interval with a handful of withheld sessions may not,
    and its "power" is then false positives)."""
    cov = float(r.get(f"{e}_coverage", math.nan))
    reps = float(r.get("replications", 1) or 1)
    se = max(
        float(r.get(f"{e}_coverage_se", 0.0) or 0.0), math.sqrt(nominal * (1 - nominal) / reps)
    )
    return not math.isnan(cov) and cov >= nominal - 4 * se


@dataclass(frozen=True)
class Choice:
    """The pick at one (lift, horizon), or the most powerful candidate when none qualifies."""

    lift_condition: str
    true_lift: float
    horizon: int
    feasible: bool
    row: pd.Series
    smallest_rate: dict[str, float | None]
    tied: tuple[str, ...] = ()
    state: str = MEETS
    """The pick's power against the target: meets, within noise or misses
    (``reports.claims.target_state``)."""
    near: tuple[str, ...] = ()
    """When nothing qualifies: the candidates (``estimator at rate``) whose power is within
    ``NOISE_Z`` SE of the difference of the most powerful's, which the noise cannot order
    below it."""


def choose(cands: pd.DataFrame, target: float, horizons: list[int] | None = None) -> list[Choice]:
    """The cheapest qualifying candidate per (lift, horizon) (module docstring)."""
    out = []
    for (cond, horizon), g in cands.groupby(["lift_condition", "sessions"], sort=True):
        if horizons is not None and horizon not in horizons:
            continue
        valid = g[g["valid"]]
        ok = valid[valid["power"] >= target]
        if ok.empty:
            pool = valid if not valid.empty else g
            row = pool.sort_values(["power", "explore_rate"], ascending=[False, True]).iloc[0]
            tied: tuple[str, ...] = ()
            near = tuple(
                f"{r['estimator']} at {readable(r['explore_rate'])}"
                for i, r in pool.iterrows()
                if i != row.name
                and abs(row["power"] - r["power"])
                <= NOISE_Z * math.hypot(_se0(row["power_se"]), _se0(r["power_se"]))
            )
        else:
            row = ok.sort_values(
                ["cost", "explore_rate", "power", "estimator"], ascending=[True, True, False, True]
            ).iloc[0]
            same = ok[(ok["run"] == row["run"]) & (ok["estimator"] != row["estimator"])]
            tied = tuple(sorted(same["estimator"]))
            near = ()
        smallest = {}
        for e in g["estimator"].unique():
            mine = ok[ok["estimator"] == e]
            smallest[e] = float(mine["explore_rate"].min()) if not mine.empty else None
        state = target_state(float(row["power"]), float(row["power_se"]), target, True)
        out.append(
            Choice(cond, float(g["true_lift"].iloc[0]), int(horizon), not ok.empty, row,
                   smallest, tied, state, near)
        )  # fmt: skip
    return out


def choice_table(choices: list[Choice], estimators: list[str]) -> pd.DataFrame:
    """The lift x horizon grid: the pick and, per estimator, its smallest qualifying rate."""
    rows = []
    for c in choices:
        r = c.row
        row = {
            "true lift": readable(c.true_lift),
            "horizon (sessions)": readable(c.horizon),
            "reaches target": state_words(c.state),
            "estimator": f"{r['estimator']} ({r['guarantee']})"
            + (f"; same cost: {', '.join(c.tied)}" if c.tied else "")
            + (
                f"; as powerful within {NOISE_Z:g} SE: {len(c.near)} other"
                + "s" * (len(c.near) > 1)
                if c.near
                else ""
            )
            + ("" if r["valid"] else "; its interval undercovers here"),
            "explore rate": readable(r["explore_rate"]),
            "power": with_se(r["power"], r["power_se"]),
            "successes forgone": with_se(r["cost"], r["cost_se"]),
        }
        for e in estimators:
            rate = c.smallest_rate.get(e)
            row[f"{e}: smallest rate"] = "none" if rate is None else readable(rate)
        rows.append(row)
    return pd.DataFrame(rows)


def choice_sentence(choices: list[Choice], target: float) -> str:
    """One sentence over the lifts at the longest horizon."""
    horizon = max(c.horizon for c in choices)
    parts = []
    for c in sorted((c for c in choices if c.horizon == horizon), key=lambda c: -c.true_lift):
        r = c.row
        if c.feasible:
            also = f" (as cheaply: {', '.join(c.tied)})" if c.tied else ""
            near = f" (within {NOISE_Z:g} SE of the target)" if c.state == WITHIN_NOISE else ""
            parts.append(
                f"for true lift {readable(c.true_lift)} by {r['estimator']}{also} at explore "
                f"rate {readable(r['explore_rate'])}, power {with_se(r['power'], r['power_se'])}"
                f"{near}, {with_se(r['cost'], r['cost_se'])} successes forgone"
            )
        else:
            parts.append(
                f"for true lift {readable(c.true_lift)} by no swept rate and estimator (the most "
                "powerful: "
                f"power {with_se(r['power'], r['power_se'])}, {r['estimator']} at "
                f"{readable(r['explore_rate'])}{_near(c.near)})"
            )
    joined = "; ".join(parts)
    return (
        f"With {readable(horizon)} sessions, power {target:g} with an interval that covers is "
        f"reached most cheaply {joined}."
    )


def _se0(se: float) -> float:
    return 0.0 if math.isnan(se) else se


def _near(near: tuple[str, ...], named: int = 2) -> str:
    """The candidates the noise cannot order below the most powerful, two named."""
    if not near:
        return ""
    more = f" and {len(near) - named} more" if len(near) > named else ""
    return f"; tied within {NOISE_Z:g} SE of the difference with {', '.join(near[:named])}{more}"


def _rate_plan(d: dict | None) -> RatePlan | None:
    return None if d is None else RatePlan(**d)


def planner_table(
    sweep, rows: pd.DataFrame, base: float, alpha: float, target: float, rates: list[float]
) -> pd.DataFrame:
    """Per (lift, horizon): the planner's pick over the swept rates, the sessions it needs
    at each swept rate, its power at the pick and the simulated ``dim_power`` there (the
    planner assumes every session succeeds with probability ``base`` or ``base + lift``),
    as the sweep's ``answers/explore.json`` holds them."""
    out = []
    for (_, horizon), g in rows.groupby(["lift_condition", "sessions"], sort=True):
        lift = float(g["true_lift"].iloc[0])
        asked = {"lift": lift, "base": base, "target_power": target, "alpha": alpha,
                 "rates": list(rates), "horizon": int(horizon)}  # fmt: skip
        found = answer(sweep, "explore", asked, f"--target-power {target:g}")
        if found["plan"] is None:
            continue  # the planner refuses the design (a lift outside [0, 1] from base)
        needed = "; ".join(
            f"{readable(r['explore_rate'])}: {readable(r['sessions'])}"
            for r in found["plan"]["rates"]
        )
        row = {
            "true lift": readable(lift),
            "horizon (sessions)": readable(int(horizon)),
            "sessions needed (rate: sessions)": needed,
        }
        pick = _rate_plan(found["plan"]["pick"])
        row |= {"planner's pick": "none within the horizon", "its power there": "",
                "simulated dim power there": ""}  # fmt: skip
        if pick is not None:
            sim = g[(g["explore_rate"] - pick.explore_rate).abs() < 1e-12]
            row["planner's pick"] = readable(pick.explore_rate)
            row["its power there"] = readable(pick.power_at_horizon)
            row["simulated dim power there"] = (
                with_se(sim["dim_power"].iloc[0], sim["dim_power_se"].iloc[0])
                if not sim.empty and "dim_power" in sim
                else "not run"
            )
        seq = _rate_plan(found["sequential_pick"])
        row["pick, sequential read"] = "none" if seq is None else readable(seq.explore_rate)
        out.append(row)
    return pd.DataFrame(out)


def planner_agreement(
    sweep, rows: pd.DataFrame, base: float, alpha: float
) -> tuple[int, int, float]:
    """``(cells within 4 SE, cells, largest |z|)`` of the planner's fixed-n power (exact
    where the withheld arm is small; the sweep's ``answers/explore.json``) against the
    simulated ``dim_power`` at every cell."""
    zs = []
    for _, r in rows.iterrows():
        asked = {"lift": float(r["true_lift"]), "base": base, "alpha": alpha,
                 "sessions": int(r["sessions"]), "rate": float(r["explore_rate"])}  # fmt: skip
        want = _fixed_power(sweep, asked)
        if want is None:
            continue
        se = float(r["dim_power_se"])
        zs.append(abs(float(r["dim_power"]) - want) / se if se > 0 else math.nan)
    finite = [z for z in zs if not math.isnan(z)]
    return sum(z <= 4 for z in finite), len(finite), max(finite) if finite else math.nan


def _fixed_power(sweep, asked: dict) -> float | None:
    """The planner's fixed-n power at one cell, as the sweep answered it (None: the
    planner refuses the design)."""
    for name, data in sweep.answers.items():
        if name.split("_")[0] != "explore":
            continue
        for cell in data.get("fixed_power", ()):
            if cell["targets"] == asked:
                return cell["power"]
    answer(sweep, "explore", {"cell": str(asked)})  # raises: names the run, says what to do
    return None


def online_sentence(online: list[Choice], target: float) -> str:
    """The cheapest always-valid read per lift at the longest horizon (``online``: the
    choices among the confidence sequences only)."""
    if not online:
        return "No confidence sequence was logged, so there is no always-valid read."
    horizon = max(c.horizon for c in online)
    parts = []
    for c in sorted((c for c in online if c.horizon == horizon), key=lambda c: -c.true_lift):
        r = c.row
        if c.feasible:
            parts.append(
                f"{r['estimator']} at explore rate {readable(r['explore_rate'])} for true lift "
                f"{readable(c.true_lift)} ({with_se(r['cost'], r['cost_se'])} successes forgone)"
            )
        else:
            parts.append(f"none at any swept rate for true lift {readable(c.true_lift)}")
    if not any(c.feasible for c in online if c.horizon == horizon):
        return (
            f"To read while sessions accrue (stopping at any time), no confidence sequence "
            f"reaches power {target:g} read at the horizon of {readable(horizon)} sessions, at "
            "any swept rate and lift."
        )
    return (
        "To read while sessions accrue (stopping at any time), the cheapest confidence "
        f"sequence whose power read at the horizon of {readable(horizon)} sessions reaches "
        f"{target:g} is " + "; ".join(parts) + " (stopping at the first exclusion of 0 only "
        "adds power)."
    )


def planner_holds(
    sweep, rows: pd.DataFrame, base: float, alpha: float, target: float, rates: list[float]
) -> list:
    """Holds if / breaks when: each planner pick at the longest horizon, unchanged, with
    the true lift or the horizon moved (``procmem_core.ab.sensitivity``, computed by the
    sweep); one sentence per pick naming what breaks it first, then one table."""
    horizon = int(rows["sessions"].max())
    frames, said = [], []
    for lift in sorted(rows.loc[rows["sessions"] == horizon, "true_lift"].unique(), reverse=True):
        asked = {"lift": float(lift), "base": base, "target_power": target, "alpha": alpha,
                 "rates": list(rates), "horizon": horizon}  # fmt: skip
        found = answer(sweep, "explore", asked, f"--target-power {target:g}")
        held = rows_of(found.get("holds_if", ()))  # older sweeps: none
        pick = _rate_plan(None if found["plan"] is None else found["plan"]["pick"])
        if not held or pick is None:
            continue
        name = f"rate {readable(pick.explore_rate)} for lift {readable(float(lift))}"
        said.append(breaks_sentence(f"the planner's {name}", held, _power_words(target)))
        columns = {"power": ("power (fixed-n)", "{:.3f}".format)}
        table = holds_table("", held, columns, f">= {target:g}")
        frames.append(table.frame.assign(pick=name).set_index("pick").reset_index())
        frames[-1]["how"] = [r.note for r in held]
    if not frames:
        return []
    caption = (
        f"{HOLDS_TITLE}: each planner pick at the {readable(horizon)}-session horizon, "
        "unchanged, with the true lift or the horizon moved: its power for the difference in "
        f"means read once at the horizon (exact binomial where the withheld arm is expected "
        f"to hold at most {EXACT_ARM} sessions, else the normal formula)"
    )
    return [" ".join(said), Table(caption, pd.concat(frames, ignore_index=True))]


def _power_words(target: float):
    """A row's power told against the target power (``reports.holds.short_of``)."""

    def words(r) -> str:
        return short_of(f"power {r.figure('power'):.3f}", bool(r.holds), f"{target:g}")

    return words
