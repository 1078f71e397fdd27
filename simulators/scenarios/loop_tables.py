"""The tables of ``LoopScenario``: gate decisions with the truth, shown vs withheld arms,
the trajectory per window of sessions, where the regret comes from, and the export as a
session log (``session_log``; ``ledger_log``: its runs and revisions, docs/logs.md).

Regret of a session: ``p_oracle - p_true``, the expected successes lost against always
following the best procedure of the task as it is now (or none, when none beats the
base rate). Its sources (``loop_records.REGRET_SOURCES``) split every session by what the
agent did and why, so the report can say which part of the loop a trend comes from.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd

from procmem_core.gates import DECISION_COLUMNS
from simulators.scenarios.loop_records import REGRET_SOURCES
from simulators.scenarios.loop_world import LoopWorld

GATE_TRUTH = ("replication", "kind", "p_prior", "p_new", "true_drop", "correct_verdict")
"""What the loop's world knows beside each of the store's records."""
GATE_COLUMNS = [*DECISION_COLUMNS, *GATE_TRUTH]
"""The one ``gate_decisions`` schema (``gates.DECISION_COLUMNS``), then the truth."""
ARMS_COLUMNS = ["replication", "key", "arm", "sessions", "successes", "rate", "mean_true_rate"]
TRAJECTORY_COLUMNS = [
    "replication", "session_start", "sessions", "success_rate", "expected_success_rate",
    "oracle_success_rate", "regret", "off_task_rate", "quarantined", "templates",
]  # fmt: skip
SOURCES_COLUMNS = ["replication", "period", "source", "period_sessions", "sessions",
                   "successes", "regret"]  # fmt: skip
"""The columns of ``arms_table``, ``trajectory_table`` and ``regret_sources_table``, in
order (their rows are built as tuples)."""


def gate_table(worlds: list[LoopWorld]) -> pd.DataFrame:
    """Every gate record each store made, with the revision's known true effect."""
    rows = []
    for i, w in enumerate(worlds):
        truth = {(r.key, r.revision): r for r in w.revisions}
        for d in w.store.gate_decisions():
            r = truth.get((f"{d.namespace}/{d.key}", d.revision))
            if r is None:
                known = (None, np.nan, np.nan, np.nan, None)
            else:
                known = (r.kind, r.p_prior, r.p_new, r.p_prior - r.p_new, r.correct_verdict)
            rows.append((*[getattr(d, c) for c in DECISION_COLUMNS], i, *known))
    return pd.DataFrame(rows, columns=GATE_COLUMNS)  # rows as tuples: no key lookup per cell


def arms_table(worlds: list[LoopWorld]) -> pd.DataFrame:
    """Per replication and procedure: sessions shown (followed) vs withheld, and their rates."""
    rows = []
    for i, w in enumerate(worlds):
        c = w.columns()
        for j, key in enumerate(w.task_of):
            for arm, codes in (("shown", c.key_code), ("withheld", c.withheld_code)):
                sel = np.flatnonzero(codes == j)  # its sessions, in order
                n = len(sel)
                k = int(c.ok[sel].sum()) if n else 0
                # the array ``np.mean`` of the list of their rates would build, in order
                mean_true = float(np.mean(c.p_true[sel])) if n else np.nan
                rows.append((i, key, arm, n, k, k / n if n else np.nan, mean_true))
    return pd.DataFrame(rows, columns=ARMS_COLUMNS)


def trajectory_table(worlds: list[LoopWorld], sessions: int, window: int) -> pd.DataFrame:
    """Per replication and window of sessions: success, expected and oracle rates, regret,
    the share of off-task sessions, and the statuses at the window's last evolve."""
    rows = []
    starts = range(0, sessions, window)
    for i, w in enumerate(worlds):
        c = w.columns()
        columns = (c.ok, c.p_true, c.p_oracle, c.p_oracle - c.p_true, c.off)
        means = [window_means(x, window, starts) for x in columns]
        evolves, seen, last = w.status_by_window, 0, {}
        for j, start in enumerate(starts):
            stop = min(start + window, len(w.rows))
            while seen < len(evolves) and evolves[seen][0] < stop:  # in session order
                last = evolves[seen][1]
                seen += 1
            rows.append(
                (i, start, stop - start, *[m[j] for m in means],
                 sum(v == "quarantined" for v in last.values()),
                 sum(v == "template" for v in last.values()))
            )  # fmt: skip
    return pd.DataFrame(rows, columns=TRAJECTORY_COLUMNS)


def window_means(values: np.ndarray, window: int, starts: range) -> list[float]:
    """``float(np.mean(values[s : s + window]))`` for each start ``s``: the full windows in
    one ``mean(axis=1)`` over rows of the array (numpy sums each contiguous row as it sums
    the slice, so the floats are the same), the rest one by one."""
    full = min(len(values) // window, len(starts))
    out = values[: full * window].reshape(full, window).mean(axis=1).tolist() if full else []
    return out + [float(np.mean(values[s : s + window])) for s in starts[full:]]


def regret_sources_table(worlds: list[LoopWorld], quarter: int) -> pd.DataFrame:
    """Per replication, period (``early``: the first ``quarter`` sessions, ``late``: the
    last, ``all``) and source: sessions, successes and the regret summed over them (in
    session order, as Python's ``sum`` of the floats)."""
    rows = []
    for i, w in enumerate(worlds):
        c = w.columns()
        sources, regret = c.sources(), c.p_oracle - c.p_true
        periods = {"early": slice(None, quarter), "late": slice(-quarter, None),
                   "all": slice(None)}  # fmt: skip
        for period, span in periods.items():
            labels, m = sources[span], len(REGRET_SOURCES)
            n = np.bincount(labels, minlength=m).tolist()
            k = np.bincount(labels, c.ok[span], minlength=m).tolist()
            # each bin's floats added in session order from 0.0: Python's ``sum`` of them
            lost = np.bincount(labels, regret[span], minlength=m).tolist()
            for j, source in enumerate(REGRET_SOURCES):
                rows.append((i, period, source, len(labels), n[j], int(k[j]), lost[j]))
    return pd.DataFrame(rows, columns=SOURCES_COLUMNS)


def session_log(worlds: list[LoopWorld], explore_rate: float,
                base_rate: float) -> tuple[pd.DataFrame, pd.DataFrame]:  # fmt: skip
    """The replications as one session log (docs/logs.md) and its truth. Replication
    ``r``'s procedure ``ref`` is ``r<r>:<ref>`` and its session ``t`` is ``r<r>-s<t>``
    at time ``t``; ``top_key`` is the pack's top match (withheld or shown; empty when
    nothing matched), ``outcome`` the session's true outcome (the feedback model acts
    on the runs the store records, not on this log). The truth per procedure: its lift
    given the sessions drawn, ``mean(p_true over its shown sessions) - base_rate`` (a
    withheld session, or one shown another task's procedure, succeeds at the base rate;
    the pack does not replace a withheld top match)."""
    rows, truth = [], []
    for r, w in enumerate(worlds):
        shown_p: dict[str, list[float]] = {}
        for t, x in enumerate(w.sessions):
            top = x.withheld if x.withheld is not None else x.shown
            key = "" if top is None else f"r{r}:{top}"
            if top is not None and x.withheld is None:
                shown_p.setdefault(key, []).append(x.p_true)
            rows.append((f"r{r}-s{t}", t, key, x.withheld is not None, float(x.ok)))
        for ref in w.task_of:
            key = f"r{r}:{ref}"
            p = shown_p.get(key)
            lift = float(np.mean(p)) - base_rate if p else float("nan")
            truth.append((key, r, len(p or ()), lift))
    sessions = pd.DataFrame(rows, columns=["session_id", "time", "top_key", "withheld",
                                           "outcome"])  # fmt: skip
    sessions.insert(4, "explore_rate", explore_rate)
    return sessions, pd.DataFrame(truth, columns=["key", "replication", "shown", "true_lift"])


RUN_COLUMNS = ("key", "revision", "ok", "time", "path")
REVISION_COLUMNS = ("key", "revision", "prior_revision", "proposed_at", "decided_at", "verdict")


def ledger_log(worlds: list[LoopWorld]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The replications' ``runs`` and ``revisions`` tables (docs/logs.md), read from each
    world's own store as ``procmem_core.logs.store`` reads a store file: procedure ``ref``
    of replication ``r`` is ``r<r>:<ref>`` (as in ``session_log``); a run's ``time`` is its
    run id (the ledger's clock; ``proposed_at`` and ``decided_at`` are on it too, a first
    revision proposed at 0), ``path`` the JSON list of the nodes it visited. A revision's
    prior is the last revision before it that was the original or accepted (a revert
    restores it); the original is logged ``accepted`` with no prior, every later one with
    the store's verdict (``accepted``, ``reverted``, ``pending``)."""
    runs, revisions = [], []
    for r, w in enumerate(worlds):
        mine = []
        for ref in w.task_of:
            key = f"r{r}:{ref}"
            mine += [(key, str(x.revision), bool(x.ok), int(x.run_id),
                      json.dumps(list(x.path), separators=(",", ":")))
                     for x in w.store.runs(ref)]  # fmt: skip
            prior = None
            for h in w.store.revisions(ref):
                first = h.outcome == "original"
                revisions.append((key, str(h.revision), prior, 0 if first else h.proposed_at,
                                  h.decided_at, "accepted" if first else h.outcome))  # fmt: skip
                if h.outcome in ("original", "accepted"):
                    prior = str(h.revision)
        runs += sorted(mine, key=lambda row: row[3])  # the replication's ledger in time order
    runs_frame = pd.DataFrame(runs, columns=list(RUN_COLUMNS))
    revs = pd.DataFrame(revisions, columns=list(REVISION_COLUMNS))
    for c in ("proposed_at", "decided_at"):  # integers, empty where not decided
        revs[c] = revs[c].astype("Int64")
    return runs_frame, revs
