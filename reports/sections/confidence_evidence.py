"""What the flat rule really tests, shown three ways: in words with exact numbers, on
tasks at two baselines, and in a prompt that can be too full.

- The seed's rule drifts up only when a procedure's sessions succeed more often than
  ``penalty / (reward + penalty)``, whatever the agent achieves without it: exact
  ``flat_fate`` figures (computed by the sweep) for a helpful procedure on a low-baseline
  task and a harmful one on a high-baseline task.
- On a world whose users have several base rates, each rule beside the seed's: shares
  kept and excluded with their SEs, and the differences with the SE of the difference.
- In a world swept over the prompt's limit, the session success rate against the limit,
  per rule, beside the no-procedure and oracle rates.
"""

from __future__ import annotations

import math

import pandas as pd

from procmem_core.flat import DEFAULT_FILTER, DEFAULT_RULE
from reports.answers import exact_fates
from reports.claims import MISSES, Option, beyond_noise, target_state
from reports.document import Detail
from reports.evidence import NOISE_Z, fmt
from reports.sections.confidence_runs import ConfidenceRuns, arithmetic_note
from reports.source import Sweep, find_param


def _world_value(sweep: Sweep, rows: pd.DataFrame, key: str, group: str) -> object:
    col = find_param(sweep.param_names, key, group)
    return None if col is None else rows[col].iloc[0]


def mixed_world(sweep: Sweep, runs: ConfidenceRuns) -> tuple[str, list[float], pd.DataFrame]:
    """``(world, base rates, its runs)`` of the first world with several base rates."""
    col = find_param(sweep.param_names, "base_rates", "users")
    if col is None:
        return "", [], runs.rows.iloc[0:0]
    for world, rows in runs.rows.groupby("world", sort=True):
        text = rows[col].iloc[0]
        if isinstance(text, str) and text.strip("[] "):
            return str(world), [float(x) for x in text.strip("[]").split(",")], rows
    return "", [], runs.rows.iloc[0:0]


def break_even_text(sweep: Sweep, runs: ConfidenceRuns) -> str:
    """The break-even in words, with exact fates on a low and a high baseline."""
    _, bases, rows = mixed_world(sweep, runs)
    up = _world_value(sweep, rows, "helpful_effect", "users") if len(rows) else None
    down = _world_value(sweep, rows, "harmful_effect", "users") if len(rows) else None
    if not bases:
        bases, up, down = [0.5, 0.9], 0.1, 0.1
    n = _world_value(sweep, rows if len(rows) else runs.rows, "sessions", "scenario")
    n = int(n) if n is not None and not (isinstance(n, float) and math.isnan(n)) else 60
    lo, hi = min(bases), max(bases)
    r = DEFAULT_RULE
    be = r.break_even
    # flat_fate of the seed's rule, computed by the sweep (experiments.answers.fate)
    helped, hurt = exact_fates(
        sweep, r, DEFAULT_FILTER.threshold, n, [min(1.0, lo + up), max(0.0, hi - down)]
    )
    return Detail(
        f"What the seed's rule tests: it moves a procedure's confidence up {r.reward:g} after "
        f"a good session and down {r.penalty:g} after a bad one, so the confidence drifts up "
        f"only when the procedure's sessions succeed more often than {r.penalty:g} / "
        f"({r.reward:g} + {r.penalty:g}) = {be:.3f}, whatever the agent achieves without it. "
        f"It tests 'succeeds at least {be:.3f} of the time', not 'helps'. A procedure that "
        f"lifts a {lo:g} task to {lo + up:g} helps, yet is excluded within {n} sessions with "
        f"probability {helped:.3f}; one that lowers a {hi:g} task to {hi - down:g} "
        f"hurts, yet is excluded only with probability {hurt:.3f} (exact, "
        "flat_fate). The baseline-relative rule moves by the outcome minus the task's "
        "success rate without the procedure, estimated from withheld sessions, so it drifts "
        "up exactly when the procedure beats having none; the posterior rule hides a "
        "procedure once the posterior probability that it beats that baseline falls below "
        "its threshold. " + arithmetic_note(r)
    )


def mixed_table(sweep: Sweep, runs: ConfidenceRuns) -> tuple[str, pd.DataFrame] | None:
    """Each rule beside the seed's on the mixed-baseline world (None without one)."""
    world, bases, rows = mixed_world(sweep, runs)
    seed = rows[rows["seed_rule"]]
    if rows.empty or seed.empty:
        return None
    s = seed.iloc[0]
    out, better = [], []
    for _, r in rows.iterrows():
        row = {"rule": r["label"]}
        wins = 0
        for metric, word in (("helpful_retained", "kept"), ("harmful_excluded", "excluded")):
            row[f"helpful {word}" if word == "kept" else f"harmful {word}"] = fmt(
                r[metric], r[f"{metric}_se"]
            )
            if r["seed_rule"]:
                continue
            d = float(r[metric] - s[metric])
            se = math.hypot(float(r[f"{metric}_se"]), float(s[f"{metric}_se"]))
            row[f"{word} minus seed's"] = fmt(d, se)
            mine, seeds = _option(r, metric), _option(s, metric)
            wins += d > 0 and beyond_noise(mine, seeds)
        row["session success"] = fmt(r["session_success_rate"], r["session_success_rate_se"])
        if wins == 2:
            better.append(r["label"])
        out.append(row)
    base_text = " and ".join(f"{b:g}" for b in bases)
    one = len(better) == 1
    verdict = (
        f"{'; '.join(better)} keep{'s' if one else ''} more helpful procedures and "
        f"exclude{'s' if one else ''} more harmful ones than the seed's rule, both beyond "
        "the noise"
        if better
        else "no rule beats the seed's on both shares beyond the noise"
    )
    text = f"On tasks at {base_text} (world {world}), {verdict} (differences ± their SE)."
    return text, pd.DataFrame(out)


def crowding_data(sweep: Sweep, runs: ConfidenceRuns) -> tuple[str, pd.DataFrame] | None:
    """``(world, rows)`` of the world swept over the limit, with ``family_label`` (the rule
    without its limit); None when no world ran more than one limit."""
    for world, rows in runs.rows.groupby("world", sort=True):
        if rows["limit"].nunique() > 1:
            rows = rows.assign(
                family_label=[
                    f"{r.describe()}, threshold {t:g}"
                    for r, t in zip(rows["rule"], rows["threshold"], strict=True)
                ]
            )
            return str(world), rows.sort_values("limit")
    return None


def _option(row: pd.Series, metric: str) -> Option:
    """A row's metric as an option of ``reports.claims`` (value and SE)."""
    return Option(str(row.get("label", "")), float(row[metric]), float(row[f"{metric}_se"]))


def _success(row: pd.Series) -> str:
    return fmt(row["session_success_rate"], row["session_success_rate_se"])


def crowding_text(sweep: Sweep, world: str, rows: pd.DataFrame) -> str:
    """Which limit gives the highest session success (and which are within the noise of
    it), beside the largest limit swept and the no-procedure rate."""
    gamma = _world_value(sweep, rows, "interference", "users")
    best = rows.loc[rows["session_success_rate"].idxmax()]
    near = []
    for limit, g in rows.groupby("limit"):
        r = g.loc[g["session_success_rate"].idxmax()]
        metric = "session_success_rate"
        if limit != best["limit"] and not beyond_noise(_option(best, metric), _option(r, metric)):
            near.append(f"{int(limit)} ({_success(r)})")
    widest = rows[rows["limit"] == rows["limit"].max()]
    top = widest.loc[widest["session_success_rate"].idxmax()]
    crowd = (
        f"interference {gamma:g} (each extra shown procedure lowers every shown one's effect "
        f"by {gamma:g})"
        if gamma
        else "no interference"
    )
    text = (
        f"With {crowd}, in world {world} session success is highest at limit "
        f"{int(best['limit'])} ({best['family_label']}: {_success(best)})"
    )
    if near:
        text += f", within the noise of the best at limit {', '.join(near)}"
    text += f"; at limit {int(top['limit'])} the best rule reaches {_success(top)}"
    seed = rows[rows["seed_rule"]]
    if len(seed):
        s = seed.iloc[-1]  # at its widest limit (the rows are sorted by limit)
        metric = "session_success_rate"
        at = "" if s["limit"] == top["limit"] else f" at limit {int(s['limit'])}"
        if s.name == top.name:
            text += " (the seed's rule)"
        else:
            text += f" and the seed's rule {_success(s)}{at}"
        if (
            at == ""
            and s.name != top.name
            and not beyond_noise(_option(top, metric), _option(s, metric))
        ):
            text += f" (within {NOISE_Z:g} SE of the difference: the noise cannot order them)"
    if "success_rate_no_procedures" in rows:
        none = float(rows["success_rate_no_procedures"].mean())
        text += f"; with no procedure at all {none:.3f}"
        below = [
            target_state(float(r["session_success_rate"]), float(r["session_success_rate_se"]),
                         none, higher_is_better=True) == MISSES
            for _, r in widest.iterrows()
        ]  # fmt: skip
        worse = widest[below]
        if len(worse):
            names = "; ".join(worse["family_label"])
            text += f" (at limit {int(top['limit'])} these do worse than no procedure: {names})"
    return text + "."
