"""Replays of a checked log: what each revision gate would have decided on the logged
ledger, and what a flat rule would have done with each procedure's logged outcomes.

Gate replay (as ``ProcedureStore.evolve`` judges a revision, ``graph.revision``): the
prior revision's statistics at the proposal are its runs up to ``proposed_at`` (a run at
that time counts as before); every run of the revision (also one logged at
``proposed_at``) and every later run of the prior (served concurrently) is an event, in
time order (ties: file order); at each event the gate and the cost gate are asked
(``Gate.verdict``) and their ``combine_gate_verdicts`` decides at the first event where
it is not "continue". The gates are ``procmem_core.gates``' own.

Rule replay: a procedure's confidence walks by the rule's ``update`` over the sessions
where it was the top match, shown and rated (``shown_keys`` is not read), in time order;
it is dropped from the prompt at the first update after which it no longer
``passes_threshold`` (the walk stops there: a dropped procedure is not shown, so it
gathers no more evidence).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from procmem_core.flat import FlatRule, passes_threshold, snap
from procmem_core.gates import CONTINUE, CostGate, Gate, RevisionStats, combine_gate_verdicts
from procmem_core.logs.schema import Log, Sessions, Text

VERDICT_OF = {"accept": "accepted", "revert": "reverted", "continue": "pending"}
"""A gate's verdict as the store's revision outcome (the log's ``verdict`` values)."""


@dataclass
class _Arm:
    runs: int = 0
    successes: int = 0
    costs: tuple = ()
    outcomes: tuple = ()
    concurrent: tuple = ()

    def add(self, ok: bool, cost: float, concurrent: bool) -> None:
        self.runs += 1
        self.successes += int(ok)
        if ok and cost == cost:
            self.costs += (float(cost),)
        self.outcomes += (bool(ok),)
        if concurrent:
            self.concurrent += (bool(ok),)

    def stats(self) -> RevisionStats:
        return RevisionStats.of_ledger(
            self.runs, self.successes, self.costs, self.outcomes, self.concurrent
        )


def replay_gate(gate: Gate, prior: _Arm, events: list[tuple[bool, bool, float]],
                cost_gate: Gate | None = None) -> tuple[str, int, int]:  # fmt: skip
    """``(outcome, revision runs, events)`` at the deciding event (the last when none
    decides): ``events`` are ``(is_revision, ok, cost)`` in ledger order."""
    cost_gate = CostGate() if cost_gate is None else cost_gate
    rev = _Arm()
    prior = _Arm(prior.runs, prior.successes, prior.costs, prior.outcomes)
    verdict, used = CONTINUE, 0
    for is_rev, ok, cost in events:
        (rev if is_rev else prior).add(ok, cost, concurrent=not is_rev)
        used += 1
        p, r = prior.stats(), rev.stats()
        verdict = combine_gate_verdicts(gate.verdict(p, r), cost_gate.verdict(p, r))
        if verdict != CONTINUE:
            break
    if not events:
        p, r = prior.stats(), rev.stats()
        verdict = combine_gate_verdicts(gate.verdict(p, r), cost_gate.verdict(p, r))
    return VERDICT_OF[verdict], rev.runs, used


def _runs_of(runs: dict, key: str, revision: str) -> np.ndarray:
    k, r = runs["key"], runs["revision"]
    return np.flatnonzero((k.strings() == key) & (r.strings() == revision))


def gate_replay(log: Log, gates: dict[str, Gate]) -> dict[str, np.ndarray]:
    """One row per revision with a prior: the logged verdict and, per gate, the replayed
    outcome and the revision's runs when it was decided (module docstring)."""
    runs, revs = log.runs, log.revisions
    if runs is None or revs is None:
        return {}
    key_s, rev_s = runs["key"].strings(), runs["revision"].strings()
    cost = runs.get("cost", np.full(key_s.size, np.nan))
    order = np.argsort(runs["time"], kind="stable")
    names = ("key", "revision", "prior_revision", "logged_verdict", "prior_runs", "revision_runs")
    rows: dict[str, list] = {c: [] for c in names}
    for g in gates:
        rows[f"{g}_verdict"], rows[f"{g}_runs"] = [], []
    logged = revs.get("verdict", Text(np.full(revs["key"].codes.size, -1), np.array([])))
    for i in range(revs["key"].codes.size):
        key, rev = revs["key"].value(i), revs["revision"].value(i)
        prior_rev = revs["prior_revision"].value(i)
        if not prior_rev:
            continue
        at = revs["proposed_at"][i]
        mine = order[(key_s[order] == key) & np.isin(rev_s[order], (rev, prior_rev))]
        is_rev = rev_s[mine] == rev
        before = mine[(runs["time"][mine] <= at) & ~is_rev]
        # every run of the revision is one of its events, also one logged at its proposal
        # time (integer ticks, a coarse clock): dropping it lost the revision's first run
        after = mine[(runs["time"][mine] > at) | is_rev]
        prior = _Arm()
        for j in before:
            prior.add(bool(runs["ok"][j]), float(cost[j]), concurrent=False)
        events = [(rev_s[j] == rev, bool(runs["ok"][j]), float(cost[j])) for j in after]
        rows["key"].append(key)
        rows["revision"].append(rev)
        rows["prior_revision"].append(prior_rev)
        rows["logged_verdict"].append(logged.value(i) or "")
        rows["prior_runs"].append(prior.runs)
        rows["revision_runs"].append(int(sum(e[0] for e in events)))
        for name, gate in gates.items():
            verdict, used, _ = replay_gate(gate, prior, events)
            rows[f"{name}_verdict"].append(verdict)
            rows[f"{name}_runs"].append(used)
    return {c: np.asarray(v, dtype=object if "verdict" in c or c in ("key",) else None)
            for c, v in rows.items()}  # fmt: skip


def agreement(replay: dict[str, np.ndarray], gates: dict[str, Gate]) -> dict[str, int]:
    """Per gate: revisions with a logged verdict, and those the replay agrees with."""
    if not replay:
        return {}
    logged = replay["logged_verdict"]
    has = logged != ""
    out = {"revisions": int(logged.size), "with_logged_verdict": int(has.sum())}
    for g in gates:
        out[f"{g}_agree"] = int((replay[f"{g}_verdict"][has] == logged[has]).sum())
    return out


def shown_outcomes(s: Sessions) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each procedure's shown-and-rated outcomes in time order as a padded ``(K, m)``
    matrix (NaN after its last), with the count per procedure and the times."""
    use = (s.top >= 0) & ~s.withheld & ~np.isnan(s.outcome)
    idx = np.flatnonzero(use)
    idx = idx[np.lexsort((s.time[idx], s.top[idx]))]
    k = s.top[idx]
    counts = np.bincount(k, minlength=s.keys.size)
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    col = np.arange(idx.size) - starts[k]
    m = int(counts.max(initial=0))
    y = np.full((s.keys.size, m), np.nan)
    t = np.full((s.keys.size, m), np.nan)
    y[k, col], t[k, col] = s.outcome[idx], s.time[idx]
    return y, counts, t


def rule_replay(s: Sessions, rules: dict[str, tuple[FlatRule, float]]) -> dict[str, np.ndarray]:
    """Per procedure and rule: updates before the drop (or all), the confidence then, its
    lowest, and the update and time at which the rule drops it (NaN: never)."""
    y, counts, times = shown_outcomes(s)
    out: dict[str, list] = {c: [] for c in ("key", "rule", "threshold", "shown_rated",
                                             "updates", "final_confidence", "min_confidence",
                                             "dropped_at", "dropped_time")}  # fmt: skip
    for name, (rule, threshold) in rules.items():
        k = s.keys.size
        conf = np.full(k, snap(rule.start()), dtype=float)
        low = conf.copy()
        dropped = np.full(k, -1)
        for t in range(y.shape[1]):
            live = (t < counts) & (dropped < 0)
            if not live.any():
                break
            new = rule.update(conf, y[:, t] == 1.0)
            conf = np.where(live, new, conf)
            low = np.minimum(low, conf)
            gone = live & ~np.asarray(passes_threshold(conf, threshold))
            dropped = np.where(gone, t + 1, dropped)
        kk = np.arange(k)
        out["key"] += list(s.keys)
        out["rule"] += [name] * k
        out["threshold"] += [threshold] * k
        out["shown_rated"] += list(counts)
        out["updates"] += list(np.where(dropped > 0, dropped, counts))
        out["final_confidence"] += list(conf)
        out["min_confidence"] += list(low)
        out["dropped_at"] += list(np.where(dropped > 0, dropped, np.nan))
        at = times[kk, np.maximum(dropped - 1, 0)] if y.shape[1] else np.full(k, np.nan)
        out["dropped_time"] += list(np.where(dropped > 0, at, np.nan))
    return {c: np.asarray(v, dtype=object if c in ("key", "rule") else float)
            for c, v in out.items()}  # fmt: skip
