"""``half_open``: the circuit breaker's re-test. A quarantined procedure waits a cool-down
of ``cool_down`` c sessions unserved, then is served for up to ``probes`` k probe runs in
a row; it is released at the ``release_after``-th (m) successful probe, and sent back to
cool-down as soon as m successes are out of reach (more than k - m failed probes).

Chain: cool-down states C_0..C_{c-1} (unserved), then probe states (i probes run, s of
them successes) with s < m and i - s <= k - m (served).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from procmem_core.errors import ParameterError, check_int
from procmem_core.quarantine.base import ExitChain, QuarantinePolicy, QuarantineView, release

HALF_OPEN_RELEASE = "{m} of {n} probe runs succeeded after a cool-down of {c} sessions"


@dataclass(frozen=True)
class HalfOpenPolicy(QuarantinePolicy):
    """``cool_down`` c >= 1 sessions, ``probes`` k >= 1, ``release_after`` m in [1, k]."""

    name: ClassVar[str] = "half_open"
    lifts_below_limit: ClassVar[bool] = False  # a probe success resets the streak
    cool_down: int = 20
    probes: int = 3
    release_after: int = 2

    def __post_init__(self) -> None:
        check_int("cool_down", self.cool_down, minimum=1)
        check_int("probes", self.probes, minimum=1)
        check_int("release_after", self.release_after, minimum=1)
        if self.release_after > self.probes:
            raise ParameterError(
                "release_after",
                self.release_after,
                f"expected an integer in [1, probes] = [1, {self.probes}]",
            )

    def eligible(self, view: QuarantineView, waited: int, strike_limit: int) -> bool:
        return view.probe_runs > 0 or waited >= self.cool_down

    def on_run(self, state: Any, ok: bool) -> str | None:
        state.probe_runs += 1
        state.probe_successes += int(bool(ok))
        if state.probe_successes >= self.release_after:
            n = state.probe_runs
            release(state)
            return HALF_OPEN_RELEASE.format(m=self.release_after, n=n, c=self.cool_down)
        if state.probe_runs - state.probe_successes > self.probes - self.release_after:
            state.probe_runs = state.probe_successes = 0  # back to cool-down
        return None

    def _probe_states(self) -> list[tuple[int, int]]:
        k, m = self.probes, self.release_after
        return [(i, s) for i in range(k) for s in range(min(i, m - 1) + 1) if i - s <= k - m]

    def exit_chain(self, p: float, strike_limit: int) -> ExitChain:
        c, k, m = self.cool_down, self.probes, self.release_after
        probes = self._probe_states()
        index = {st: c + j for j, st in enumerate(probes)}
        r = c + len(probes)
        stay, rel, serve = np.zeros((r, r)), np.zeros(r), np.zeros(r)
        for j in range(c):
            stay[j, j + 1 if j + 1 < c else index[(0, 0)]] = 1.0
        for (i, s), j in index.items():
            serve[j] = 1.0
            if s + 1 >= m:
                rel[j] += p
            else:
                stay[j, index[(i + 1, s + 1)]] += p
            failed = i + 1 - s > k - m
            stay[j, 0 if failed else index[(i + 1, s)]] += 1.0 - p
        return ExitChain(stay, rel, serve)
