"""The closed loop's evidence: whether it learns, and where its regret comes from.

Regret of a session is ``p_oracle - p_true``: the expected successes lost against always
following the best procedure of the task as it is now (none, when none beats the base
rate). The loop *learns* when its regret per session is lower in the last quarter of
sessions than in the first: ``regret_change = regret_late - regret_early``, one
difference per replication (the independent unit), with its standard error over
replications and a Student-t 95 % interval ``change ± t(0.975, n - 1) SE`` over the ``n``
replications (the SE is itself estimated from them: with 4, t = 3.18, not 1.96). The
verdict is "yes" when
the interval lies below 0, "it gets worse" when it lies above, and "no detectable change"
otherwise, said with the smallest change the read could have detected (its minimum
detectable change at power 0.8, ``reports.claims.detectable_change``): with few
replications the interval is wide, and "no detectable change" is not "no change".

When a sweep compares ``m`` settings and the report names the best, each interval is a
simultaneous one (Bonferroni: level ``1 - 0.05 / m`` each, so all ``m`` hold together with
probability at least 0.95): picking the lowest of 32 plain 95 % intervals would name a
setting by chance about half the time.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats

from reports.claims import MDE_POWER, detectable_change
from reports.evidence import NOISE_Z, fmt

LEVEL = 0.95


def t95(replications: float, family: int = 1) -> float:
    """``t(1 - 0.025 / m, n - 1)``: the two-sided 95 % Student-t quantile over ``n``
    replications, simultaneous over ``m = family`` intervals (Bonferroni); NaN below 2
    replications (no standard error)."""
    n = float(replications)
    tail = (1.0 - LEVEL) / (2.0 * max(int(family), 1))
    return float(stats.t.ppf(1.0 - tail, n - 1)) if n >= 2 else float("nan")


SEED_LOOP = {
    "strike_limit": 3,
    "utility_weight": 0.0,
    "concurrent_share": 0.0,
    "streak_scope": "revision",
    "explore_rate": 0.1,
}
"""The seeds' settings of the loop (by the last part of the param name); gate and
feedback are left to the reference condition."""

SEED_GROUPS = {"params.quarantine.name": "seed", "params.gate.name": "sprt"}
"""The seeds' choice of a config group the loop reads (by the full param name): absorbing
quarantine, and the SPRT gate (the loop preset sets it against ``gate=prescribed``)."""

SETTING_GROUPS = ("params.scenario.", "params.explore.")
"""Where the loop's own settings are logged (``explore.explore_rate`` feeds the loop)."""


def _seed_value(col: str) -> object | None:
    """The seed's value of a swept loop param, or None when it is not a loop setting."""
    if col in SEED_GROUPS:
        return SEED_GROUPS[col]
    last = col.split(".")[-1]
    return SEED_LOOP[last] if col.startswith("params.") and last in SEED_LOOP else None


@dataclass(frozen=True)
class Verdict:
    """Does the loop learn: the regret change with its SE, interval and the answer."""

    change: float
    se: float
    replications: int
    family: int = 1
    """How many settings' intervals hold together (Bonferroni); 1: a plain 95 % interval."""

    @property
    def interval(self) -> tuple[float, float]:
        half = t95(self.replications, self.family) * self.se
        return (self.change - half, self.change + half)

    @property
    def readable(self) -> bool:
        """Whether there is an interval to read: an SE over at least 2 known replications."""
        return not (math.isnan(self.se) or math.isnan(self.change) or self.replications < 2)

    @property
    def answer(self) -> str:
        lo, hi = self.interval
        if math.isnan(self.se) or self.replications == 1:
            return "cannot tell (one replication: no standard error)"
        if not self.readable:  # an SE, but no replications logged to read it with
            return "cannot tell (the replications behind the standard error are not known)"
        if self.se == 0 and self.change == 0:  # a detectable change of 0 says nothing
            return f"no change (0 in every one of {self.replications} replications)"
        if hi < 0:
            return "yes"
        if lo > 0:
            return "no: it gets worse"
        return f"no detectable change ({self.detectable_words()})"

    @property
    def detectable(self) -> float:
        """The smallest regret change this read would detect with power 0.8 (two-sided at
        its own level, Bonferroni over ``family``; its replications and SE):
        ``reports.claims.detectable_change``."""
        return detectable_change(self.se, self.replications, (1.0 - LEVEL) / self.family)

    def detectable_words(self) -> str:
        return (
            f"with {self.replications} replications only a change of at least "
            f"{self.detectable:.3f} per session either way would be detected with power "
            f"{MDE_POWER:g}"
        )

    def describe(self) -> str:
        n = f"{self.replications} replication{'s' * (self.replications != 1)}"
        if not self.readable:  # its interval is NaN: say there is none
            return (
                f"regret change {fmt(self.change, self.se)} (no interval: no standard error, {n})"
            )
        lo, hi = self.interval
        return (
            f"regret change {fmt(self.change, self.se)} ({self.level_words()} "
            f"[{lo:+.3f}, {hi:+.3f}], {n})"
        )

    def level_words(self) -> str:
        if self.family <= 1:
            return "95 % interval"
        return f"95 % interval simultaneous over {self.family} settings, Bonferroni"


def verdict_of(row: pd.Series, family: int = 1) -> Verdict:
    se = row.get("regret_change_se", float("nan"))
    try:
        n = int(float(row.get("params.scenario.replications", float("nan"))))
    except (TypeError, ValueError):
        n = 0
    return Verdict(float(row["regret_change"]), float(se), n, max(int(family), 1))


def seed_row(rows: pd.DataFrame) -> pd.Series | None:
    """The row at the seeds' loop settings, at the reference condition when it is there."""
    keep = np.ones(len(rows), dtype=bool)
    for col in rows.columns:
        want = _seed_value(col)
        if want is not None:
            keep &= [_same(v, want) for v in rows[col]]
    hits = rows[keep]
    if hits.empty:
        return None
    if "at_reference" in hits and hits["at_reference"].any():
        hits = hits[hits["at_reference"]]
    return hits.iloc[0]


def _same(value: object, want: object) -> bool:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return True  # not logged: the scenario's default, which is the seed's
    if isinstance(want, float | int) and isinstance(value, float | int):
        return bool(np.isclose(float(value), float(want)))
    return value == want


def learning_row(rows: pd.DataFrame) -> pd.Series | None:
    """The configuration with the strongest evidence that its regret falls: the lowest
    upper end of its interval, simultaneous over the ``len(rows)`` settings (Bonferroni),
    if that lies below 0."""
    m = len(rows)
    upper = pd.Series([verdict_of(r, m).interval[1] for _, r in rows.iterrows()], index=rows.index)
    upper = upper.fillna(np.inf)
    if not (upper < 0).any():
        return None
    return rows.loc[upper.idxmin()]


def chance_note(rows: pd.DataFrame) -> str:
    """How many "yes" or "worse" verdicts chance alone would give across the swept rows."""
    n = len(rows)
    if n < 2:
        return ""
    return (
        f" {n} configurations were run; with no real change each would still show one at "
        f"the 95 % level with probability 0.05, so about {0.05 * n:.1f} such verdicts are "
        "expected by chance: read an isolated one with that in mind."
    )


def regret_sources(table: pd.DataFrame) -> pd.DataFrame:
    """Per period and source: share of sessions and regret per session (mean ± SE over
    replications), from a run's ``regret_sources`` table."""
    t = table[table["period"] != "all"].copy()
    t["share"] = t["sessions"] / t["period_sessions"]
    t["per_session"] = t["regret"] / t["period_sessions"]
    g = t.groupby(["source", "period"], sort=False)
    out = g.agg(
        share=("share", "mean"),
        regret=("per_session", "mean"),
        regret_sd=("per_session", "std"),
        n=("per_session", "size"),
    ).reset_index()
    out["regret_se"] = out["regret_sd"] / np.sqrt(out["n"])
    return out.drop(columns=["regret_sd"])


def sources_table(sources: pd.DataFrame) -> pd.DataFrame:
    """Early vs late, one row per source that had any session."""
    wide = sources.pivot(index="source", columns="period", values=["share", "regret", "regret_se"])
    rows = []
    for source in sources["source"].drop_duplicates():
        w = wide.loc[source]
        if w[("share", "early")] == 0 and w[("share", "late")] == 0:
            continue
        rows.append(
            {
                "source": source,
                "sessions, first quarter": f"{w[('share', 'early')]:.1%}",
                "sessions, last quarter": f"{w[('share', 'late')]:.1%}",
                "regret per session, first": fmt(w[("regret", "early")], w[("regret_se", "early")]),
                "regret per session, last": fmt(w[("regret", "late")], w[("regret_se", "late")]),
                "change": f"{w[('regret', 'late')] - w[('regret', 'early')]:+.3f}",
            }
        )
    return pd.DataFrame(rows)


def biggest_changes(
    sources: pd.DataFrame, n: int = 2
) -> list[tuple[str, float, float, float, float]]:
    """The ``n`` sources whose regret per session moved the most: (source, early, late,
    share early, share late)."""
    wide = sources.pivot(index="source", columns="period", values=["regret", "share"])
    delta = (
        (wide[("regret", "late")] - wide[("regret", "early")]).abs().sort_values(ascending=False)
    )
    return [
        (
            s,
            float(wide.at[s, ("regret", "early")]),
            float(wide.at[s, ("regret", "late")]),
            float(wide.at[s, ("share", "early")]),
            float(wide.at[s, ("share", "late")]),
        )
        for s in delta.index[:n]
        if delta[s] > 0
    ]


def main_effects(rows: pd.DataFrame, metrics: tuple[str, ...]) -> pd.DataFrame:
    """For each swept loop setting and value: the mean of each metric over the rows with
    that value, equally weighted, with SE ``sqrt(sum se_i^2) / k`` (the rows are
    independent jobs; NaN when a row has none), so a setting's effect reads across every
    other setting and condition. Columns ``<metric>`` (text) and ``<metric>_mean``,
    ``<metric>_se``."""
    out = []
    for col in rows.columns:
        want = _seed_value(col)
        if want is None or not (col.startswith(SETTING_GROUPS) or col in SEED_GROUPS):
            continue
        last = col.split(".")[1] if col in SEED_GROUPS else col.split(".")[-1]
        values = rows[col].dropna().unique()
        if len(values) < 2:
            continue
        for v in sorted(values, key=str):
            sel = rows[[x is not None and _same(x, v) for x in rows[col]]]
            row = {
                "setting": last,
                "value": f"{v:g}" if isinstance(v, float) else str(v),
                "configurations": len(sel),
                "seed's": "yes" if _same(v, want) else "",
            }
            for m in metrics:
                mean = float(sel[m].mean())
                # NaN when a row has no SE (pandas' sum would skip it and read it as 0)
                ses = sel[f"{m}_se"].astype(float)
                se = float(np.sqrt((ses**2).sum(skipna=False)) / len(sel))
                row.update({m.replace("_", " "): fmt(mean, se), f"{m}_mean": mean, f"{m}_se": se})
            out.append(row)
    return pd.DataFrame(out)


EFFECTS_OVER = "means over every other setting and condition"
"""What ``main_effects`` averages, as its sentence and table say it."""


def decisive_setting(effects: pd.DataFrame, metric: str, over: str = EFFECTS_OVER) -> str:
    """A sentence naming the setting whose values move ``metric`` the most; ``over`` says
    what the means average (``EFFECTS_OVER``, or narrower when some runs were left out)."""
    if effects.empty:
        return ""
    spread = effects.groupby("setting")[f"{metric}_mean"].agg(lambda v: v.max() - v.min())
    name = spread.idxmax()
    t = effects[effects["setting"] == name]
    said = " and ".join(f"{r[metric.replace('_', ' ')]} at {r['value']}" for _, r in t.iterrows())
    means = t[f"{metric}_mean"].astype(float)
    ends = t.loc[[means.idxmax(), means.idxmin()], f"{metric}_se"].astype(float)
    if ends.isna().any():  # no SE (one replication): no noise to read the spread against
        return (
            f"Across the sweep the widest spread of the regret change is {name}'s, {said} "
            f"({over}), with no standard error to tell it from the noise."
        )
    if not spread[name] > NOISE_Z * math.hypot(*ends):  # an ordering the noise cannot make
        return (
            f"Across the sweep the setting that moves the trend most is {name}, but only within "
            f"the noise: regret change {said} ({over}) "
            f"differ by less than {NOISE_Z:g} SE of the difference, so the sweep cannot tell "
            "whether any swept setting moves it."
        )
    most = (
        f"the setting that moves the trend most is {name}"
        if len(spread) > 1
        else f"{name} moves the trend beyond the noise"
    )
    return f"Across the sweep {most}: regret change {said} ({over})."
