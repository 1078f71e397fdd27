"""The loop's verdict under informative missingness, beside the default channel's (issue
29, item 6).

A sweep that runs the loop under the default feedback channel and under
``InformativeMissing`` (``feedback=perfect,failures_rated``: failed sessions rated more
often) gives each setting twice. The channel is the world, not a setting one picks: the
section's verdict is read from the default channel's rows (``split_channels``), and this
module states each setting's verdict under informative missingness next to it: the
regret change with its 95 % interval (Student-t over replications,
``loop_evidence.Verdict``), the difference between the channels with its SE
``sqrt(se_a^2 + se_b^2)`` (independent runs), and the naive shown-vs-withheld lift on
rated sessions against the outcomes' lift, with the bias the exact formula gives
(``simulators.scenarios.loop_lift``).
"""

from __future__ import annotations

import math

import pandas as pd

from reports.document import Table
from reports.evidence import NOISE_Z, fmt, fmt_metric
from reports.sections.loop_evidence import Verdict, verdict_of

CHANNEL = "params.feedback.informative_missing."
"""The param prefix of the informative-missingness channel (``InformativeMissing``)."""


def informative(row: pd.Series) -> bool:
    """Whether a row ran with the informative-missingness channel switched on."""
    return any(c.startswith(CHANNEL) and pd.notna(row[c]) and float(row[c]) > 0 for c in row.index)


def channel_words(row: pd.Series) -> str:
    """The channel of an informative row, in words."""
    s = float(row.get(f"{CHANNEL}missing_if_success", 0) or 0)
    f = float(row.get(f"{CHANNEL}missing_if_failure", 0) or 0)
    return (
        f"informative missingness (a success unrated with probability {s:g}, a failure with {f:g})"
    )


def split_channels(rows: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``(default rows, informative rows)``: the rows without and with the channel."""
    flag = pd.Series([informative(r) for _, r in rows.iterrows()], index=rows.index, dtype=bool)
    return rows[~flag].reset_index(drop=True), rows[flag].reset_index(drop=True)


def verdict_rows(rows: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame, str]:
    """``(verdict rows, informative rows, note)``: the verdict from the default channel's
    rows (``split_channels``). A sweep run under the informative channel alone
    (``feedback=failures_rated`` without ``perfect``) has none: its rows are the loop's,
    so every verdict is read under that channel, and ``note`` says it (the labels name only
    what was swept: the old section said "At the seeds' settings the loop's answer is ..."
    as if under perfect feedback)."""
    default, missing = split_channels(rows)
    if not default.empty:
        return default, missing, ""
    note = (
        f"Every run here ran under {channel_words(missing.iloc[0])}, so each verdict is read "
        "under it, not under perfect feedback (feedback=perfect,failures_rated runs both "
        "side by side)."
    )
    return missing, missing.iloc[:0], note


def _setting(row: pd.Series, cols: list[str]) -> tuple:
    return tuple(str(row.get(c)) for c in cols)


def twins(default: pd.DataFrame, missing: pd.DataFrame) -> list[tuple[pd.Series, pd.Series]]:
    """Each default row with the informative row of the same setting (every ``params.``
    value but the feedback's equal), in the default rows' order."""
    cols = sorted(
        c
        for c in set(default.columns) | set(missing.columns)
        if c.startswith("params.") and not c.startswith("params.feedback.")
    )
    by_setting = {_setting(r, cols): r for _, r in missing.iterrows()}
    out = []
    for _, r in default.iterrows():
        twin = by_setting.get(_setting(r, cols))
        if twin is not None:
            out.append((r, twin))
    return out


def difference(a: pd.Series, b: pd.Series) -> tuple[float, float]:
    """``b - a`` in regret change and its SE (independent runs)."""
    d = float(b["regret_change"]) - float(a["regret_change"])
    se = math.hypot(float(a.get("regret_change_se", math.nan)),
                    float(b.get("regret_change_se", math.nan)))  # fmt: skip
    return d, se


def _diff_words(d: float, se: float) -> str:
    if not math.isfinite(se):  # NaN compares False: it would read as "within"
        return (
            f"the difference {fmt(d, se)} has no standard error (one replication, or none "
            "logged), so it cannot be compared with the noise"
        )
    beyond = abs(d) > NOISE_Z * se
    return (
        f"the difference {fmt(d, se)} is "
        + ("beyond" if beyond else "within")
        + f" {NOISE_Z:g} SE of the difference"
    )


def missing_sentence(pairs: list[tuple[pd.Series, pd.Series]], which: pd.Series | None,
                     family: int) -> str:  # fmt: skip
    """The verdict under informative missingness for the row ``which`` (the seeds' setting
    or the one the section names), next to the default channel's; "" when it has no twin."""
    if which is None:
        return ""
    pair = next(((a, b) for a, b in pairs if a["run_id"] == which["run_id"]), None)
    if pair is None:
        return ""
    a, b = pair
    va, vb = verdict_of(a, family), verdict_of(b, family)
    d, se = difference(a, b)
    lift = (
        f" A naive shown-vs-withheld lift on its rated sessions reads "
        f"{fmt_metric(b, 'naive_lift')} against {fmt_metric(b, 'lift')} from the outcomes; "
        f"the exact formula puts the bias at {fmt_metric(b, 'naive_lift_bias')}."
        if {"naive_lift", "lift", "naive_lift_bias"} <= set(b.index)
        and pd.notna(b.get("naive_lift"))
        else ""
    )
    return (
        f"Under {channel_words(b)}, with {setting_words(a['config'])}: does it learn? "
        f"{_answer(vb)}: "
        f"{vb.describe()}, against {va.describe()} under the default channel ({_answer(va)}); "
        f"{_diff_words(d, se)}.{lift}"
    )


def setting_words(config: str) -> str:
    """A row's configuration label without its feedback part (the channel is said apart)."""
    parts = [p for p in str(config).split("; ") if "feedback" not in p]
    return "; ".join(parts) or "the swept setting"


def _answer(v: Verdict) -> str:
    return v.answer.split(" (")[0]


def missing_table(pairs: list[tuple[pd.Series, pd.Series]], family: int) -> Table:
    """Per setting: the verdict under each channel, their difference, the naive lift."""
    records = []
    for a, b in pairs:
        va, vb = verdict_of(a, family), verdict_of(b, family)
        d, se = difference(a, b)
        records.append(
            {
                "configuration": setting_words(a["config"]),
                "default: regret change": _with_interval(va),
                "default: learns?": _answer(va),
                "informative: regret change": _with_interval(vb),
                "informative: learns?": _answer(vb),
                "difference (± SE)": fmt(d, se),
                "naive lift (rated)": _metric(b, "naive_lift"),
                "lift (outcomes)": _metric(b, "lift"),
                "exact bias": _metric(b, "naive_lift_bias"),
            }
        )
    level = verdict_of(pairs[0][0], family).level_words() if pairs else "95 % interval"
    return Table(
        f"The verdict under {channel_words(pairs[0][1])} next to the "
        f"default channel's: regret change ± SE [{level}], the difference with its SE, and "
        "under the informative channel the naive shown-vs-withheld lift on rated sessions, "
        "the outcomes' lift and the exact formula's bias (± SE over replications)",
        pd.DataFrame(records),
    )


def _with_interval(v: Verdict) -> str:
    if not v.readable:
        return f"{fmt(v.change, v.se)} (no interval: no standard error)"
    lo, hi = v.interval
    return f"{fmt(v.change, v.se)} [{lo:+.3f}, {hi:+.3f}]"


def _metric(row: pd.Series, metric: str) -> str:
    return fmt_metric(row, metric) if pd.notna(row.get(metric)) else "not logged"
