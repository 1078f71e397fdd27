"""Synthetic users: a base success rate and, per procedure, an effect on it.

Modelled on RecSim's user model: latent traits drawn by a seeded sampler, kept apart
from the response (feedback) model. A user ``u`` has a base success rate ``b_u``; a
procedure ``j`` shifts it by ``e_uj`` when it is in the prompt. The success probability
of a session is ``clip(b_u + sum of e_uj over shown procedures, 0, 1)``.

- Base rates: all equal to ``base_rate`` when ``heterogeneity`` is 0, else
  ``Beta(m (1 - rho) / rho, (1 - m) (1 - rho) / rho)`` with ``m = base_rate`` and
  ``rho = heterogeneity``. ``rho`` is the intra-class correlation of two sessions of one
  user: ``Var(b) = m (1 - m) rho``, so outcomes are over-dispersed by ``1 + (n - 1) rho``
  for ``n`` sessions per user.
- Mixed baselines: with ``base_rates`` (e.g. tasks at 0.5 and 0.9) each user's base rate
  is one of them, equally likely; ``base_rate`` must then be their mean.
- Effects: each (user, procedure) pair is helpful (``+helpful_effect``) with probability
  ``helpful_share``, harmful (``-harmful_effect``) with probability ``harmful_share``,
  neutral (0) otherwise.
- A crowded prompt: with ``interference`` gamma, each extra shown procedure lowers every
  shown procedure's effect by gamma, so ``m`` shown procedures add
  ``sum of their effects - gamma m (m - 1)`` (SkillsBench, 2026: focused skills of 2-3
  modules beat comprehensive ones). 0 by default: one procedure, or none, is unaffected.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import stats

from procmem_core.errors import ParameterError, check_probability

HELPFUL, NEUTRAL, HARMFUL = 1, 0, -1
KIND_NAMES = {HELPFUL: "helpful", NEUTRAL: "neutral", HARMFUL: "harmful"}


@dataclass(frozen=True)
class UserPopulation:
    """Where users come from. All fields are plain numbers (Hydra-friendly)."""

    base_rate: float = 0.6
    heterogeneity: float = 0.0
    helpful_share: float = 0.4
    harmful_share: float = 0.2
    helpful_effect: float = 0.15
    harmful_effect: float = 0.15
    interference: float = 0.0
    base_rates: tuple[float, ...] = ()

    def __post_init__(self) -> None:
        check_probability("base_rate", self.base_rate)
        check_probability("interference", self.interference)
        self._check_base_rates()
        check_probability("heterogeneity", self.heterogeneity, open_high=True)
        if self.heterogeneity > 0 and not 0 < self.base_rate < 1:
            raise ParameterError(
                "base_rate", self.base_rate, "expected 0 < base_rate < 1 when heterogeneity > 0"
            )
        for name in ("helpful_share", "harmful_share", "helpful_effect", "harmful_effect"):
            check_probability(name, getattr(self, name))
        if self.helpful_share + self.harmful_share > 1 + 1e-12:
            raise ParameterError(
                "harmful_share",
                self.harmful_share,
                f"expected helpful_share + harmful_share <= 1 (helpful_share={self.helpful_share})",
            )

    def _check_base_rates(self) -> None:
        if not isinstance(self.base_rates, tuple | list):
            raise ParameterError("base_rates", self.base_rates, "a list of rates in [0, 1]")
        object.__setattr__(self, "base_rates", tuple(self.base_rates))  # from a config list
        for i, b in enumerate(self.base_rates):
            check_probability(f"base_rates[{i}]", b)
        if not self.base_rates:
            return
        if self.heterogeneity > 0:
            raise ParameterError(
                "base_rates", self.base_rates, "no heterogeneity with base_rates (set it to 0)"
            )
        mean = float(np.mean(self.base_rates))
        if abs(mean - self.base_rate) > 1e-9:
            raise ParameterError(
                "base_rate", self.base_rate, f"the mean of base_rates ({mean:g}) when they are set"
            )

    @property
    def base_points(self) -> tuple[float, ...]:
        """The base rates users can have when they are finitely many (equally likely), else
        ``(base_rate,)`` for identical users; empty under Beta heterogeneity."""
        if self.base_rates:
            return tuple(float(b) for b in self.base_rates)
        return () if self.heterogeneity > 0 else (float(self.base_rate),)

    @property
    def beta_parameters(self) -> tuple[float, float] | None:
        """``(a, b)`` of the Beta law of base rates, or None when every user has ``base_rate``."""
        rho = self.heterogeneity
        if rho == 0:
            return None
        k = (1.0 - rho) / rho
        return self.base_rate * k, (1.0 - self.base_rate) * k

    def sample_base(self, rng: np.random.Generator, shape: int | tuple[int, ...]) -> np.ndarray:
        """Base success rates of ``shape`` users."""
        if self.base_rates:
            return np.asarray(self.base_rates, dtype=float)[
                rng.integers(0, len(self.base_rates), size=shape)
            ]
        ab = self.beta_parameters
        if ab is None:
            return np.full(shape, float(self.base_rate))
        return rng.beta(ab[0], ab[1], size=shape)

    def sample_effects(self, rng: np.random.Generator, shape: int | tuple[int, ...]) -> np.ndarray:
        """Effects of ``shape`` (user, procedure) pairs: +helpful, 0 or -harmful."""
        u = rng.random(shape)
        out = np.zeros(shape)
        out[u < self.helpful_share] = self.helpful_effect
        out[
            (u >= self.helpful_share) & (u < self.helpful_share + self.harmful_share)
        ] = -self.harmful_effect
        return out

    @staticmethod
    def success_probability(base: np.ndarray, effect: np.ndarray | float) -> np.ndarray:
        """``clip(base + effect, 0, 1)``: the response model of one session."""
        return np.clip(np.add(base, effect), 0.0, 1.0)

    def crowded_effect(self, effect_sum: np.ndarray, shown: np.ndarray) -> np.ndarray:
        """The shown procedures' total effect in a prompt of ``shown`` procedures:
        ``effect_sum - interference * m (m - 1)`` (unchanged at interference 0)."""
        if self.interference == 0:
            return effect_sum
        m = np.asarray(shown, dtype=float)
        return effect_sum - self.interference * m * np.maximum(m - 1.0, 0.0)

    def expected_lift(self, effect: float) -> float:
        """Exact ``E[clip(b + e, 0, 1) - b]`` over the base-rate law, for a fixed effect ``e``.

        Uses ``E[(b - c)+] = m (1 - F_{a+1,b}(c)) - c (1 - F_{a,b}(c))`` and its mirror
        ``E[(c - b)+] = c F_{a,b}(c) - m F_{a+1,b}(c)`` for the clipped tails.
        """
        e = float(effect)
        if self.base_points:
            return float(np.mean([min(1.0, max(0.0, b + e)) - b for b in self.base_points]))
        ab = self.beta_parameters
        a, bb = ab
        m = self.base_rate
        if e >= 0:
            c = 1.0 - e  # clip at 1 removes E[(b + e - 1)+] = E[(b - c)+]
            tail = m * stats.beta.sf(c, a + 1, bb) - c * stats.beta.sf(c, a, bb)
            return float(e - tail)
        c = -e  # clip at 0 adds back E[(c - b)+]
        tail = c * stats.beta.cdf(c, a, bb) - m * stats.beta.cdf(c, a + 1, bb)
        return float(e + tail)

    @property
    def mean_lift(self) -> float:
        """Exact population mean lift of one procedure (a random user, a random kind)."""
        return self.helpful_share * self.expected_lift(
            self.helpful_effect
        ) + self.harmful_share * self.expected_lift(-self.harmful_effect)


def effect_kind(effects: np.ndarray) -> np.ndarray:
    """HELPFUL (1), NEUTRAL (0) or HARMFUL (-1) for each effect."""
    return np.sign(effects).astype(np.int8)
