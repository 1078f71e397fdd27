"""When does a review policy still reach its precision? Its exact figures with the user
count, an endorsement rate or the reviewer's accuracy moved (issue 30, "holds if / breaks
when").

The exact figures hold in the review world without erasures and without a multi-user
writer (``LearningsScenario`` with ``erasure_share = multi_user_share = 0``), where every
supporter of a rule is an honest user writing through a token pinned to them, so a rule's
``supporter_writers`` and ``supporter_count`` are both its distinct supporters ``d``:

- the policy's bar is ``d >= k``, ``k`` the largest threshold that is on (``and``) or the
  smallest (``or``);
- a rule of a kind endorsed at ``rate`` per session of its agent is supported at
  ``q = rate / agents`` per session; its k-th distinct supporter arrives at ``T_k``
  (``exact.first_reach(q, k, sessions, users)``), it is reviewed ``review_delay``
  sessions later, so within the horizon with ``r = P(T_k <= sessions - review_delay)``;
- the reviewer is right with probability ``a``: helpful promoted with ``a r_h``, neutral
  and harmful with ``(1 - a) r``. Recall ``a r_h``; precision, the ratio of expected
  counts that the simulated share of helpful among promoted estimates,
  ``s_h a r_h / (s_h a r_h + (1 - a)(s_n r_n + s_x r_x))`` (``s``: the kinds' shares);
- the median wait of a helpful rule (sessions to promotion, a rule not promoted censored
  at the horizon): the first ``t`` with ``a P(T_k <= t - review_delay) >= 1/2``,
  ``sessions + 1`` when none is within the horizon.

``holds``: precision >= the target. Erasures and a multi-user writer have no exact
answer here: ``review_sensitivity`` says so in a row of its own instead of a figure.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace

import numpy as np

from procmem_core.errors import ParameterError, check_int, check_probability
from procmem_core.holds import SensitivityRow, relative_shift
from procmem_core.learnings.exact import first_reach
from procmem_core.learnings.policy import ReviewPolicy

TARGET_PRECISION = 0.9
"""The share of promoted rules that must be helpful (the learnings section's target)."""
USER_FACTORS = (0.5, 2.0)
"""User counts tried, as multiples of the world's."""
RATE_FACTORS = {"helpful_rate": (0.5, 0.75), "neutral_rate": (2.0,), "harmful_rate": (2.0,)}
"""Endorsement rates tried, as multiples of the world's (toward less separation)."""
UNMODELLED_NAMES = {"multi_user_share": "multi-user writer share"}
"""How a parameter without an exact answer is named in its row."""
ACCURACY_MOVES = (-0.1, -0.05, 0.05)
"""Reviewer accuracies tried (added to the world's, kept in [0, 1])."""


@dataclass(frozen=True)
class ReviewWorld:
    """The review world the exact figures assume (``LearningsScenario``'s names; its
    defaults are the scenario's, read there: ``experiments.answers.learnings.world_of``)."""

    users: int
    sessions: int
    agents: int
    helpful_rate: float
    neutral_rate: float
    harmful_rate: float
    helpful_share: float
    harmful_share: float
    reviewer_accuracy: float
    review_delay: int

    def __post_init__(self) -> None:
        check_int("users", self.users, minimum=1)
        check_int("sessions", self.sessions, minimum=1)
        check_int("agents", self.agents, minimum=1)
        check_int("review_delay", self.review_delay, minimum=0)
        for name in ("helpful_rate", "neutral_rate", "harmful_rate", "helpful_share",
                     "harmful_share", "reviewer_accuracy"):  # fmt: skip
            check_probability(name, getattr(self, name))
        if self.helpful_share + self.harmful_share > 1 + 1e-12:
            most = f"at most 1 - helpful_share ({1 - self.helpful_share:g})"
            raise ParameterError("harmful_share", self.harmful_share, most)


@dataclass(frozen=True)
class ReviewFigures:
    """A policy's exact figures in a ``ReviewWorld`` (module docstring): the bar ``k``,
    ``reviewed`` (P(reviewed within the horizon) per kind), recall, precision (NaN when
    nothing can be promoted) and the helpful median wait."""

    bar: int
    reviewed: dict[str, float]
    recall: float
    precision: float
    median_wait: int


def bar(policy: ReviewPolicy) -> int:
    """Distinct honest supporters the policy needs: the largest threshold that is on
    (``and``) or the smallest (``or``)."""
    on = [k for k in (policy.min_writers, policy.min_users) if k]
    return max(on) if policy.combine == "and" else min(on)


def review_figures(policy: ReviewPolicy, world: ReviewWorld) -> ReviewFigures:
    """The exact figures (module docstring)."""
    k, a = bar(policy), world.reviewer_accuracy
    window = world.sessions - world.review_delay
    reach = {}
    for kind in ("helpful", "neutral", "harmful"):
        q = getattr(world, f"{kind}_rate") / world.agents
        reach[kind] = first_reach(q, k, window, world.users) if window >= 1 else np.zeros(0)
    reviewed = {kind: float(f.sum()) for kind, f in reach.items()}
    neutral_share = 1.0 - world.helpful_share - world.harmful_share
    good = world.helpful_share * a * reviewed["helpful"]
    bad = (1 - a) * (
        neutral_share * reviewed["neutral"] + world.harmful_share * reviewed["harmful"]
    )
    precision = good / (good + bad) if good + bad > 0 else math.nan
    promoted_by = a * np.cumsum(reach["helpful"])  # promoted by session t = T_k + delay
    hit = np.flatnonzero(promoted_by >= 0.5 - 1e-12)
    wait = int(hit[0]) + 1 + world.review_delay if hit.size else world.sessions + 1
    return ReviewFigures(k, reviewed, a * reviewed["helpful"], precision, wait)


def _row(policy, world, target, assumption, value, shift) -> SensitivityRow:
    f = review_figures(policy, world)
    figures = {"precision": f.precision, "recall": f.recall, "median_wait": float(f.median_wait)}
    ok = not math.isnan(f.precision) and f.precision >= target - 1e-12
    return SensitivityRow(assumption, value, figures, ok, shift)


def _moves(world: ReviewWorld) -> list[tuple[str, str, ReviewWorld, float]]:
    out = []
    for f in USER_FACTORS:
        users = max(1, round(f * world.users))
        out.append(("user count", f"{users}", replace(world, users=users),
                    relative_shift(users, world.users)))  # fmt: skip
    for name, factors in RATE_FACTORS.items():
        for f in factors:
            rate = min(1.0, round(f * getattr(world, name), 12))
            out.append((name.replace("_", " "), f"{rate:g}", replace(world, **{name: rate}),
                        relative_shift(rate, getattr(world, name))))  # fmt: skip
    for move in ACCURACY_MOVES:
        a = round(world.reviewer_accuracy + move, 12)
        if 0.0 <= a <= 1.0:
            out.append(("reviewer accuracy", f"{a:g}", replace(world, reviewer_accuracy=a),
                        relative_shift(a, world.reviewer_accuracy)))  # fmt: skip
    return out


def review_sensitivity(
    policy: ReviewPolicy,
    world: ReviewWorld,
    target: float,
    unmodelled: Sequence[tuple[str, float]] = (),
) -> tuple[SensitivityRow, ...]:
    """The world's own row, then the user count, each endorsement rate and the reviewer's
    accuracy moved (``USER_FACTORS``, ``RATE_FACTORS``, ``ACCURACY_MOVES``), then one row
    per ``unmodelled`` parameter the sweep ran (``(name, largest value)``, e.g. the erasure
    share) with no figure: the exact answer assumes it is 0."""
    target = check_probability("target", target)
    assumed = ", ".join(f"{k} {v:g}" for k, v in asdict(world).items())
    rows = [_row(policy, world, target, "as assumed", assumed, math.nan)]
    rows += [_row(policy, w, target, name, value, s) for name, value, w, s in _moves(world)]
    for name, value in unmodelled:
        if value:
            said = UNMODELLED_NAMES.get(name, name.replace("_", " "))
            note = "no exact answer: the exact figures assume 0 (see the simulated table)"
            rows.append(SensitivityRow(said, f"{value:g}", {}, None, math.nan, note))
    return tuple(rows)
