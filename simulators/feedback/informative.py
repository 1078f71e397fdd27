"""``InformativeMissing``: whether a session is rated depends on its outcome.

Failed sessions are rated more often than successful ones (or the other way): the
informative missingness of real feedback (Little & Rubin, Statistical Analysis with
Missing Data, 2019, ch. 1: missing not at random). A session with outcome ``o`` is
unrated with probability ``missing_if_success`` (o = 1) or ``missing_if_failure``
(o = 0), independently of everything else. Among rated sessions at true rate ``q`` the
success rate is then (Bayes)

    g(q) = q r1 / (q r1 + (1 - q) r0),   r1 = 1 - missing_if_success, r0 = 1 - missing_if_failure,

so a naive shown-vs-withheld lift on rated sessions estimates ``g(p1) - g(p0)``, not
``p1 - p0`` (``Feedback.positive_rate``). ``flat_fate`` gives the flat rule's exact fate.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import ClassVar

import numpy as np
from scipy import stats

from procmem_core.errors import check_int, check_probability
from procmem_core.flat import DEFAULT_RULE, DEFAULT_THRESHOLD, FlatFate, FlatRule
from procmem_core.flat import flat_fate as rated_fate
from simulators.feedback.base import ARRIVAL, FeedbackChannel


@dataclass(frozen=True)
class InformativeMissing(FeedbackChannel):
    """Each session is unrated with probability ``missing_if_success`` after a success and
    ``missing_if_failure`` after a failure (each in [0, 1))."""

    missing_if_success: float = 0.0
    missing_if_failure: float = 0.0
    name: ClassVar[str] = "informative_missing"
    stage: ClassVar[int] = ARRIVAL
    informative: ClassVar[bool] = True

    def __post_init__(self) -> None:
        check_probability("missing_if_success", self.missing_if_success, open_high=True)
        check_probability("missing_if_failure", self.missing_if_failure, open_high=True)

    @property
    def active(self) -> bool:
        return self.missing_if_success > 0 or self.missing_if_failure > 0

    def observe(
        self, rng: np.random.Generator, outcome: np.ndarray, user: np.ndarray | float
    ) -> np.ndarray:
        missing = np.where(outcome, self.missing_if_success, self.missing_if_failure)
        return rng.random(np.shape(outcome)) >= missing

    def reported_rate(self, outcome: bool, user: np.ndarray | float) -> float:
        return 1.0 - (self.missing_if_success if outcome else self.missing_if_failure)

    def flat_fate(
        self,
        p: float,
        sessions: int,
        rule: FlatRule = DEFAULT_RULE,
        threshold: float = DEFAULT_THRESHOLD,
        baseline: float | None = None,
    ) -> FlatFate:
        """The exact fate of a flat procedure with success rate ``p`` over ``sessions``
        sessions when only rated sessions update it (``expected_sessions_applied``:
        sessions in which it was shown).

        Each shown session is rated with probability ``r = p r1 + (1 - p) r0``, and a
        rated one is a success with probability ``p' = g(p)``, independently of when the
        ratings came; exclusion is absorbing. So with ``F(k)`` the fate after ``k``
        updates at ``p'`` (``procmem_core.flat_fate``), ``P(excluded within t sessions) =
        sum_k Binomial(k; t, r) F(k)`` and ``E[shown] = sum_{t<n} (1 - P(excluded
        within t))``.
        """
        p = check_probability("p", p)
        sessions = check_int("sessions", sessions, minimum=1)
        r1, r0 = self.reported_rate(True, 0.0), self.reported_rate(False, 0.0)
        rated = p * r1 + (1.0 - p) * r0
        updates = rated_fate(p * r1 / rated, sessions, rule, threshold, baseline)
        if updates.n_states == 0:  # never passes the threshold: never shown (at rate p)
            return replace(updates, p=p)
        by_updates = np.concatenate([[0.0], updates.excluded_by_session])  # F(0..n)
        t = np.arange(1, sessions + 1)
        k = np.arange(sessions + 1)
        weights = stats.binom.pmf(k[None, :], t[:, None], rated)  # (t, k), 0 for k > t
        excluded = weights @ by_updates
        shown = 1.0 + float(np.sum(1.0 - excluded[:-1]))  # session 1 is always shown
        return FlatFate(
            p=p,
            sessions=sessions,
            p_excluded=float(excluded[-1]),
            expected_sessions_applied=shown,
            excluded_by_session=excluded,
            break_even=updates.break_even,
            n_states=updates.n_states,
        )
