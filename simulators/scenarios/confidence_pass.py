"""One chunk of the confidence scenario, one pass over its users x procedures a session.

The session's steps (``ConfidenceScenario``'s docstring) run in the old order and draw
the same random numbers in the same order (withholding, exploration and the outcome
from one buffer per session, then the feedback channels), so a seed gives the numbers
it gave before the pass was fused. What changed is how the work is done
(``confidence_library``):

- the prompt filter: where no user has more than ``limit`` procedures above the
  threshold, ``shown`` is the ``active`` mask of the last update; elsewhere the
  lowest-ranked are dropped one round per surplus procedure;
- the counts by kind of the shown procedures are the active ones', counted again only
  where the limit binds; withholding and exploration adjust them by the cell they change;
- the success probability ``clip(base + crowded sum of shown effects)`` is computed from
  those counts; where a uniform draw lies within ``CLOSE`` of it (so that the rounding
  of the effect sum could decide the outcome) it is recomputed as the row sum it was;
- the per-session trajectory is recorded as integer counts per user and tallied once per
  chunk (exact: integer sums do not depend on their order);
- with nothing that can show an excluded procedure again (no exploration, no delay)
  the threshold is absorbing, so the session of each harmful procedure's exclusion is
  read off the drop in the user's count of active harmful ones.
"""

from __future__ import annotations

import numpy as np

from procmem_core.explore import withhold_top
from simulators.feedback import ArrivalLine
from simulators.result import RatioTally
from simulators.scenarios.confidence_library import (
    FloatConfidences,
    GridConfidences,
    KindWeights,
)
from simulators.users import HARMFUL, HELPFUL, effect_kind

CLOSE = 1e-9
"""A bound, far above the rounding of a sum of at most 255 effects, on how much the
counted effect sum can differ from the row sum."""


def row_sum(x: np.ndarray) -> np.ndarray:
    """Sum over the last axis, by ``einsum`` (the scenario's row sum of shown effects)."""
    if x.dtype == np.bool_:
        return np.einsum("ij->i", x.view(np.uint8)).astype(float)
    return np.einsum("ij->i", x)


RECORDS = ("success", "shown", "helpful_shown", "helpful", "neutral", "harmful")
"""The per-user counts recorded each session (the last three: active procedures by kind)."""


class SessionPass:
    """The chunk's arrays and its session loop (``run``)."""

    def __init__(self, scenario, rng: np.random.Generator, n: int) -> None:
        sc, k = scenario, scenario.procedures
        self.sc, self.rng, self.n, self.k = sc, rng, n, k
        pop = sc.population
        self.base = pop.sample_base(rng, n)
        self.effects = pop.sample_effects(rng, (n, k))  # users x procedures, as drawn
        self.kind = effect_kind(self.effects)
        kt = self.kind.T
        self.helpful = np.ascontiguousarray(kt == HELPFUL)
        self.harmful = np.ascontiguousarray(kt == HARMFUL)
        self.weights = KindWeights(self.helpful, self.harmful)
        self.state = GridConfidences.build(
            sc.rule, sc.threshold, k, n, sc.sessions
        ) or FloatConfidences(sc.rule, sc.threshold, k, n)
        self.absorbing = sc.reshow_rate == 0 and sc.feedback.delay == 0
        self.out_seen = None if self.absorbing else np.zeros((k, n), bool)
        self.gone = np.zeros(n)
        self.gone_sessions = np.zeros(n)
        size = n * (1 + (sc.withhold_rate > 0) + (sc.reshow_rate > 0) * (1 + k))
        self.draws = np.empty(size)
        self.block = np.empty((len(RECORDS), sc.sessions, n), np.uint8)  # all written
        self.rec = dict(zip(RECORDS, self.block, strict=True))

    def run(self) -> None:
        """Every session of the chunk."""
        line = ArrivalLine(self.sc.feedback.delay)
        active = self.state.active()
        coded = self.weights.code(active)
        if self.out_seen is not None:  # below the threshold from the start: excluded at
            self._mark_excluded(0, active)  # session 1, as the absorbing path counts it
        for t in range(self.sc.sessions):
            self.session(t, line, active, coded)
            active = self.state.active()
            coded = self.weights.code(active)
            self._record(t, active, coded)

    def session(self, t: int, line: ArrivalLine, active: np.ndarray, coded: np.ndarray) -> None:
        """Prompt, withholding, exploration, outcome, signal and update of session ``t``
        (``coded``: the active cells' counts by kind, ``KindWeights``)."""
        sc, n, k = self.sc, self.n, self.k
        draws = self.rng.random(out=self.draws)
        shown = active  # a copy only where something changes it
        if sc.limit < k:
            n_active = self.weights.total(coded)
            if n_active.max() > sc.limit:
                shown = active.copy()
                self.state.select(active, n_active, sc.limit, shown)
                coded = self.weights.code(shown)
        if sc.withhold_rate > 0 or sc.reshow_rate > 0:
            shown = active.copy() if shown is active else shown
            coded = coded.copy()
        at = 0
        if sc.withhold_rate > 0:
            self._withhold(draws[:n], shown, coded)
            at = n
        if sc.reshow_rate > 0:
            u, key = draws[at : at + n], draws[at + n : at + n + n * k]
            self._explore(u, key.reshape(n, k), shown, coded)
            at += n + n * k
        helpful, harmful, total = self.weights.decode(coded)
        n_shown = total.astype(float)
        outcome = self._outcome(draws[at:], shown, helpful, harmful, n_shown)
        self.rec["success"][t] = outcome
        self.rec["shown"][t] = n_shown
        self.rec["helpful_shown"][t] = helpful
        sig = sc.feedback.transmit(self.rng, outcome, self.base)
        due = line.push((shown, sig.label, sig.observed, n_shown))
        if due is not None:
            self.state.update(*due)

    def _withhold(self, u: np.ndarray, shown: np.ndarray, coded: np.ndarray) -> None:
        """Withhold (in place) the top shown procedure, or the whole prompt
        (``withhold="all"``), of the users whose draw is below ``withhold_rate`` and who
        are shown any."""
        sc = self.sc
        cols = np.flatnonzero(withhold_top(u, sc.withhold_rate) & (coded != 0))
        if sc.withhold == "all":
            shown[:, cols] = False
            coded[cols] = 0
        elif cols.size:
            j = self.state.top(cols, shown)
            shown[j, cols] = False
            coded[cols] -= self.weights.at(j, cols)

    def _explore(self, u: np.ndarray, key: np.ndarray, shown: np.ndarray, coded) -> None:
        """Show (in place) one not-shown procedure, the one with the largest ``key``
        (uniform, users x procedures), to the users whose draw ``u`` is below
        ``reshow_rate``."""
        go = u < self.sc.reshow_rate
        key = np.where(shown, -1.0, key.T)
        pick = np.argmax(key, axis=0)
        go &= key[pick, np.arange(self.n)] >= 0
        cols = np.flatnonzero(go)
        j = pick[cols]
        shown[j, cols] = True
        coded[cols] += self.weights.at(j, cols)

    def _outcome(self, u, shown, helpful, harmful, n_shown) -> np.ndarray:
        """``u < clip(base + crowded effect of the shown procedures, 0, 1)``."""
        pop = self.sc.population
        effect = helpful * pop.helpful_effect - harmful * pop.harmful_effect
        p = pop.success_probability(self.base, pop.crowded_effect(effect, n_shown))
        close = np.flatnonzero(np.abs(u - p) < CLOSE)
        if close.size:  # the row sum, as the effects are summed per user
            cells = self.effects[close] * np.ascontiguousarray(shown[:, close].T)
            exact = pop.crowded_effect(row_sum(cells), n_shown[close])
            p[close] = pop.success_probability(self.base[close], exact)
        return u < p

    def _record(self, t: int, active: np.ndarray, coded: np.ndarray) -> None:
        """The active counts by kind after session ``t``, and first exclusions."""
        rec = self.rec
        helpful, harmful, total = self.weights.decode(coded)
        rec["helpful"][t], rec["harmful"][t] = helpful, harmful
        np.subtract(total, helpful + harmful, out=rec["neutral"][t], casting="unsafe")
        if self.out_seen is not None:
            self._mark_excluded(t, active)

    def _mark_excluded(self, t: int, active: np.ndarray) -> None:
        """Count the harmful cells first seen below the threshold after session ``t``."""
        newly = ~active
        newly &= ~self.out_seen
        self.out_seen |= newly
        count = np.add.reduce(newly & self.harmful, axis=0, dtype=np.int64)
        self.gone += count
        self.gone_sessions += (t + 1) * count

    def kind_counts(self) -> dict[str, np.ndarray]:
        """Each user's procedures by kind (floats)."""
        helpful = np.add.reduce(self.helpful, axis=0, dtype=np.int64).astype(float)
        harmful = np.add.reduce(self.harmful, axis=0, dtype=np.int64).astype(float)
        return {"helpful": helpful, "neutral": self.k - helpful - harmful, "harmful": harmful}

    def harmful_gone(self, harmful: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Per user: harmful procedures excluded at some session, and the sum of the
        sessions of their first exclusion."""
        if self.out_seen is not None:
            return self.gone, self.gone_sessions
        # sum_t (t + 1) (left[t - 1] - left[t]) with left[-1] = harmful, telescoped
        left = self.rec["harmful"]
        final = left[-1].astype(float)
        earlier = left[:-1].sum(axis=0, dtype=np.int64)
        return harmful - final, harmful + earlier - len(left) * final


def tally_trajectory(traj: dict, sim: SessionPass, per_kind: dict) -> None:
    """Add the chunk's sessions to the trajectory's tallies, every session at once, as
    ``RatioTally.add(t, x[t], y[t])`` would one by one. Exact: the records are integer
    counts, summed in integers, so the sums do not depend on their order."""
    block, rec = sim.block, sim.rec
    n = block.shape[-1]
    acc = np.uint32 if n * 255**2 < 2**32 else np.uint64
    s1 = dict(zip(RECORDS, block.sum(axis=-1, dtype=acc).astype(float), strict=True))
    squares = np.multiply(block, block, dtype=np.uint16).sum(axis=-1, dtype=acc)
    s2 = dict(zip(RECORDS, squares.astype(float), strict=True))
    for name in ("success", "shown"):
        _add(traj[name], n, s1[name], s2[name], (), scale=1.0)
    cross = np.multiply(rec["helpful_shown"], rec["shown"], dtype=np.uint16)
    sxy = cross.sum(axis=-1, dtype=acc).astype(float)
    _add(traj["precision"], n, s1["helpful_shown"], s2["helpful_shown"],
         (s1["shown"], sxy, s2["shown"]))  # fmt: skip
    labels = RECORDS[3:]
    y = np.stack([per_kind[label] for label in labels]).astype(np.uint8)
    cross = np.multiply(block[3:], y[:, None, :], dtype=np.uint16).sum(axis=-1, dtype=acc)
    sy = y.sum(axis=-1, dtype=np.int64).astype(float)
    syy = np.multiply(y, y, dtype=np.uint16).sum(axis=-1, dtype=np.int64).astype(float)
    for i, label in enumerate(labels):
        sums = (sy[i], cross[i].astype(float), syy[i])
        _add(traj[f"{label}_active"], n, s1[label], s2[label], sums)


def _add(tally: RatioTally, n: int, sx, sxx, y_sums: tuple, scale: float | None = None) -> None:
    """Add ``n`` clusters per slot with sums ``sx``, ``sxx`` and ``(sy, sxy, syy)`` (for
    a constant ``y = scale``: ``n scale``, ``scale sx``, ``n scale^2``)."""
    rows = len(sx)
    if scale is not None:
        y_sums = (scale * n, scale * sx, scale * scale * n)
    sy, sxy, syy = y_sums
    tally.n[:rows] += n
    tally.sx[:rows] += sx
    tally.sxx[:rows] += sxx
    tally.sy[:rows] += sy
    tally.sxy[:rows] += sxy
    tally.syy[:rows] += syy
