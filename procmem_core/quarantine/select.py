"""Which matches a pack serves under a quarantine policy, with the additive floor.

The pack matches its top ``2 * max_procedures + n`` procedures with the quarantined ones
included (n = ``policy.candidates``). A quarantined match is *open* when the policy lets
it be served like any other now (``policy.eligible``, from the sessions it has waited
unserved since its last run: ``Waiting``); the others are skipped, as the seed's pack
skips every quarantined procedure.

With a floor f > 0 (probation) the pack first draws which of its first n matches to
serve first: candidate i with probability ``f + (1 - n f) w_i``, where ``w`` is the pack's
own choice (1 on the first open match when it is among the n, else 0 everywhere, and then
with probability ``1 - n f`` no candidate is drawn and the pack's order stands). The
probabilities sum to 1 and every candidate, quarantined or not, gets at least f: the
floor is added, never clipped and renormalised (docs/statistics.md). f < 1/n is checked
when the policy is built.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from procmem_core.quarantine.base import QuarantinePolicy

QUARANTINED = "quarantined"


def floor_probabilities(n: int, lead: int | None, floor: float) -> np.ndarray:
    """``f + (1 - n f) w`` over n candidates, ``w`` one-hot on ``lead`` (None: all 0)."""
    probs = np.full(n, float(floor))
    if lead is not None:
        probs[lead] += 1.0 - n * floor
    return probs


@dataclass
class Waiting:
    """Sessions each quarantined procedure has been a candidate and not served since its
    last run, per pack (a run, which changes its run count, starts the count again)."""

    counts: dict[str, tuple[int, int, int]] = field(default_factory=dict)

    def waited(self, m: Any) -> int:
        rev, runs, n = self.counts.get(m.ref, (m.revision, m.runs, 0))
        return n if (rev, runs) == (m.revision, m.runs) else 0

    def skip(self, m: Any) -> None:
        self.counts[m.ref] = (m.revision, m.runs, self.waited(m) + 1)


def is_open(m: Any, policy: QuarantinePolicy, strike_limit: int, waiting: Waiting) -> bool:
    """Whether the pack may serve match ``m`` like any other now: not quarantined, or
    quarantined and opened by the policy (``policy.eligible``)."""
    return m.status != QUARANTINED or policy.eligible(m, waiting.waited(m), strike_limit)


def serve_order(
    matches: Sequence[Any],
    policy: QuarantinePolicy,
    strike_limit: int,
    waiting: Waiting,
    u: float,
    slots: int,
) -> list[Any]:
    """The matches to serve, best first, at most ``slots``: the floor's draw (uniform
    ``u``) first, then the open matches in rank order. Quarantined matches not served
    this session wait one more session."""
    opened = [m for m in matches if is_open(m, policy, strike_limit, waiting)]
    chosen = None
    n = min(policy.candidates, len(matches))
    if policy.floor > 0 and n > 0:
        lead = next(
            (i for i, m in enumerate(matches[:n]) if is_open(m, policy, strike_limit, waiting)),
            None,
        )
        cum = np.cumsum(floor_probabilities(n, lead, policy.floor))
        i = int(np.searchsorted(cum, u, side="right"))
        chosen = matches[i] if i < n else None
    order = ([chosen] if chosen is not None else []) + [m for m in opened if m is not chosen]
    served = order[:slots]
    for m in matches:
        if m.status == QUARANTINED and all(m is not s for s in served):
            waiting.skip(m)
    return served
