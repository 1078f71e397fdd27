"""Every candidate of a flat rule family's design grid with its exact figures at a horizon
(``flat.design`` searches this table).

``by_fate``: rules whose state is their counts, ``flat_fate`` per member and threshold.
``by_grid``: step rules (their state is the confidence), every threshold and initial of a
member at once by the backward recursion on the confidences the rule reaches (each
member's ``confidence_space``, found for a batch of members in one lockstep search,
``spaces.reach``):
``V_k(x) = p V_{k-1}(up(x)) + (1 - p) V_{k-1}(down(x))`` for ``x`` at or above the
threshold (``V = 0`` below), ``V_0 = 1``, so ``P(kept) = V_n(x0)`` and
``E[sessions shown] = sum_{k<n} V_k(x0)``, the same numbers as ``flat_fate`` (``Batch``).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np

from procmem_core.errors import ParameterError
from procmem_core.flat.fate import flat_fate
from procmem_core.flat.rule import DesignSpace, FlatRule, StepMoves, StepRule
from procmem_core.flat.spaces import reach, rule_moves, settled_starts
from procmem_core.flat.targets import RuleTargets

__all__ = ["MEMBERS_PER_BATCH", "Batch", "Table", "by_fate", "by_grid", "chunks", "still_shown"]


@dataclass
class Table:
    """Every candidate of a family: the member, threshold, initial and exact figures."""

    space: np.ndarray
    threshold: np.ndarray
    initial: np.ndarray
    kept: np.ndarray
    excluded: np.ndarray
    sessions: np.ndarray


def by_fate(grid: Sequence[DesignSpace], targets: RuleTargets, horizon: int) -> tuple[Table, int]:
    """Rules whose state is their counts: ``flat_fate`` per member and threshold."""
    rows = []
    for i, ds in enumerate(grid):
        for t in ds.thresholds:
            fh = flat_fate(targets.p_helpful, horizon, ds.rule, t, targets.base)
            fx = flat_fate(targets.p_harmful, horizon, ds.rule, t, targets.base)
            alive = fx.shown_by_session  # 0 throughout when it starts below the threshold
            n = targets.within
            rows.append(
                (i, t, ds.rule.start(targets.base), 1 - fh.excluded_by_session[n - 1],
                 fx.excluded_by_session[n - 1], alive[:n].sum(), fh, fx)
            )  # fmt: skip
    cols = list(zip(*rows, strict=True))
    table = Table(*(np.array(c, dtype=float) for c in cols[:6]))
    table.curves = (cols[6], cols[7])  # for the shortest-horizon search
    return table, 0


MEMBERS_PER_BATCH = 8
"""Members walked together (bounds the memory of the float spaces, which hold a few
doubles per decimal value)."""


def chunks(members: Iterable[int]) -> list[np.ndarray]:
    """``members`` in batches of ``MEMBERS_PER_BATCH``."""
    members = np.asarray(members, dtype=int)
    return [members[i : i + MEMBERS_PER_BATCH] for i in range(0, len(members), MEMBERS_PER_BATCH)]


def by_grid(grid: Sequence[DesignSpace], targets: RuleTargets, horizon: int) -> tuple[Table, int]:
    """Step rules: one confidence space per member, all thresholds and starts at once
    (``MEMBERS_PER_BATCH`` members at a time)."""
    parts, skipped = [], 0
    for members in chunks(range(len(grid))):
        batch = Batch(grid, targets.base, members=members, horizon=horizon)
        vh, vx, sx = batch.survival((targets.p_helpful, targets.p_harmful), horizon)
        start = batch.states[batch.cand_g]
        parts.append((batch.cand_space, batch.cand_thr, start, vh, 1.0 - vx, sx))
        skipped += batch.skipped
    return Table(*(np.concatenate(col) for col in zip(*parts, strict=True))), skipped


def _spaces(grid, base: float, members: list[int], horizon: int) -> dict:
    """Each member's confidence space at its lowest threshold, from its initials at or
    above it: ``{member: (space, starts)}``, None for a member whose space is too large or
    whose starts are not confidences. Step rules sharing an arithmetic are searched
    together (``spaces.reach`` with ``StepMoves``: each member's states are those of its
    own ``confidence_space``); another rule alone, by its own ``update``."""
    groups: dict[tuple, list[int]] = {}
    for i in members:
        r = grid[i].rule
        alone = None if isinstance(r, StepRule) else i
        groups.setdefault((r.needs_baseline, r.arithmetic, alone), []).append(i)
    out = {}
    for (needs_baseline, arithmetic, alone), group in groups.items():
        rules = [grid[i].rule for i in group]
        b = base if needs_baseline else None
        lows = [min(grid[i].thresholds) for i in group]
        starts = [
            np.asarray([x for x in grid[i].initials if x >= low], dtype=float)
            for i, low in zip(group, lows, strict=True)
        ]
        settled = [_settled(r, x) for r, x in zip(rules, starts, strict=True)]
        moves = StepMoves(rules, b) if alone is None else rule_moves(rules[0], b)
        bound = horizon if arithmetic == "float" else None
        found = reach(moves, [np.zeros(0) if x is None else x for x in settled], lows,
                      horizon=bound)  # fmt: skip
        for j, i in enumerate(group):
            fail = settled[j] is None or found.too_large[j]
            out[i] = None if fail else (found.space(j), starts[j])
    return out


def _settled(rule: FlatRule, starts: np.ndarray) -> np.ndarray | None:
    """``spaces.settled_starts``, None where they are not confidences (left out)."""
    try:
        return settled_starts(rule, starts)
    except ParameterError:
        return None


class Batch:
    """Every (member, threshold) chain in one flat index; the sentinel (index ``size``)
    is "excluded", where ``V = 0``. A member's space is built once, at its lowest
    threshold; a higher threshold keeps the states at or above it (a suffix: states are
    sorted), and a move below it goes to the sentinel."""

    def __init__(self, grid, base: float, members=None, *, horizon: int) -> None:
        self.skipped = 0
        parts: list[list[np.ndarray]] = [[] for _ in range(7)]
        size = 0
        members = [int(i) for i in (range(len(grid)) if members is None else members)]
        spaces = _spaces(grid, base, members, horizon)
        for i in members:
            if spaces[i] is None:  # too fine a grid for a chain: left out, and counted
                self.skipped += 1
                continue
            sp, starts = spaces[i]
            size = self._add(parts, i, grid[i], sp, size, starts)
        states, up, down, self.cand_space, self.cand_thr, g, depth = (
            np.concatenate(x) if x else np.zeros(0) for x in parts
        )
        # states in order of depth, so the states within j updates of a start are a prefix
        # (a radix sort: depths are small integers, and numpy sorts 16-bit keys by radix)
        small = depth.size == 0 or depth.max() < 2**16
        order = np.argsort(depth.astype(np.uint16 if small else np.int64), kind="stable")
        at = np.empty(size + 1, dtype=np.int64)
        at[order], at[size] = np.arange(size), size  # old index -> new; the sentinel stays
        self.size = size
        self.states = states[order]
        # (a move marked -1 reads at[-1], the sentinel)
        self.up = at[up.astype(np.int64, copy=False)[order]]
        self.down = at[down.astype(np.int64, copy=False)[order]]
        self.cand_g = at[g.astype(np.int64, copy=False)]
        self.within = np.searchsorted(depth[order], np.arange(horizon + 1), side="right")

    @staticmethod
    def _add(parts, i, ds, sp, size, starts) -> int:
        n = len(sp.states)
        thr = np.asarray(ds.thresholds, dtype=float)
        first = np.searchsorted(sp.states, thr)
        counts = n - first
        offsets = size + np.concatenate(([0], np.cumsum(counts)[:-1]))
        block_first = np.repeat(first, counts)
        block_offset = np.repeat(offsets, counts)
        local = np.arange(int(counts.sum())) - (block_offset - size) + block_first
        for moves, slot in ((sp.up, 1), (sp.down, 2)):
            to = moves[local]
            parts[slot].append(np.where(to >= block_first, to - block_first + block_offset, -1))
        parts[0].append(sp.states[local])
        parts[6].append(sp.depth[local])
        at = np.searchsorted(sp.states, starts)
        use = at[None, :] >= first[:, None]
        where = at[None, :] - first[:, None] + offsets[:, None]
        parts[3].append(np.full(int(use.sum()), i))
        parts[4].append(np.broadcast_to(thr[:, None], use.shape)[use])
        parts[5].append(where[use])
        return size + int(counts.sum())

    def walk(self, ps: tuple[float, ...], horizon: int) -> Iterator[tuple[int, list[np.ndarray]]]:
        """Yield ``(k, [V_k at every candidate's start, for each p])`` for k = 1..horizon.

        ``V_horizon`` at a start reads ``V_k`` only at states within ``horizon - k``
        updates of a start, so step ``k`` updates only those (a prefix: ``within``).
        """
        if horizon > len(self.within) - 1:
            raise ValueError(f"a walk of {horizon} steps on a batch built for fewer")
        pv = np.asarray(ps, dtype=float)
        # two buffers per p, swapped each step (V_k written where V_{k-2} was: step k reads
        # V_{k-1} only in the prefix step k-1 wrote), so no step copies; the sentinel is 0
        # in both. The sums are those of ``p V(up) + (1 - p) V(down)`` in that order.
        src, dst = np.ones((2, pv.size, self.size + 1))
        src[:, self.size] = dst[:, self.size] = 0.0
        scratch = np.empty(self.size)
        for k in range(1, horizon + 1):
            n = self.within[horizon - k]
            up, down, b = self.up[:n], self.down[:n], scratch[:n]
            for j, p in enumerate(pv):
                a = dst[j, :n]
                np.take(src[j], up, out=a)
                a *= p
                np.take(src[j], down, out=b)
                b *= 1.0 - p
                a += b
            src, dst = dst, src
            at = src[:, self.cand_g]
            yield k, list(at)

    def survival(self, ps: tuple[float, float], horizon: int):
        """``V_horizon`` at every candidate's start for both success probabilities (one
        walk), and ``sum_{k<horizon} V_k`` there for the second: ``(v_first, v_second,
        sessions_second)``."""
        total = np.ones(self.cand_g.size)
        at = [np.ones(self.cand_g.size)] * 2  # V_0 = 1
        for k, at in self.walk(ps, horizon):
            if k < horizon:
                total += at[1]
        return at[0], at[1], total


def still_shown(
    rules: Sequence[tuple[FlatRule, float]], p: float, horizon: int, base: float
) -> np.ndarray:
    """P(still shown after ``horizon`` sessions) of each ``(step rule, threshold)`` from
    the rule's start at success probability ``p`` (``1 - flat_fate(...).p_excluded``), by
    ``Batch``'s backward recursion: the rules that differ only in their initial confidence
    share one space, so thousands of rules cost one walk per ``MEMBERS_PER_BATCH``
    members. The recursion sums in another order than ``flat_fate`` (agreement to 1e-12,
    ``tests/procmem_core/flat/test_flat_design.py``). NaN where a member's space is too
    large for a chain (``Batch.skipped``)."""
    members: dict[FlatRule, tuple[set, set]] = {}
    for rule, thr in rules:
        if rule.needs_counts:
            raise ParameterError("rule", rule.describe(), "a step rule (its state a confidence)")
        thresholds, starts = members.setdefault(rule.with_initial(rule.ceiling), (set(), set()))
        thresholds.add(float(thr))
        starts.add(float(rule.start(base if rule.needs_baseline else None)))
    grid = [DesignSpace(m, tuple(sorted(t)), tuple(sorted(s))) for m, (t, s) in members.items()]
    found: dict[tuple[int, float, float], float] = {}
    for chunk in chunks(range(len(grid))):
        batch = Batch(grid, base, members=chunk, horizon=horizon)
        ((_, (v,)),) = deque(batch.walk((p,), horizon), maxlen=1)  # V_horizon
        keys = zip(batch.cand_space, batch.cand_thr, batch.states[batch.cand_g], v, strict=True)
        found |= {(int(i), float(t), float(s)): float(x) for i, t, s, x in keys}
    index = {m: i for i, m in enumerate(members)}
    out = np.full(len(rules), np.nan)
    for j, (rule, thr) in enumerate(rules):
        start = float(rule.start(base if rule.needs_baseline else None))
        if start < thr:  # never shown: excluded before its first session (flat_fate's 1)
            out[j] = 0.0
            continue
        out[j] = found.get((index[rule.with_initial(rule.ceiling)], float(thr), start), np.nan)
    return out
