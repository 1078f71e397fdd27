"""Session logs (docs/logs.md) simulated from a known world, so every analysis of a log
can be checked against the truth.

``LogWorld``: ``procedures`` procedures with success rates ``base`` when withheld and
``base + lift`` when shown; each session top-matches one procedure drawn uniformly (none
with probability ``unmatched``), from a user drawn uniformly from a pool of ``users``
(none: no ``user_id``) whose success probability is shifted by ``d_u ~ N(0, user_sd)``
(clipped to [0, 1]); the pack withholds the top match with probability ``explore_rate``
while the log says ``logged_rate`` (a planted sample-ratio mismatch when they differ). A
rating goes missing with probability ``missing``; one that arrives does so
``Geometric(1 / (1 + delay)) - 1`` ticks later (mean ``delay``).

``simulate`` draws ``replications`` logs at once as arrays ``(R, n)``; ``log_table`` and
``log_columns`` give one of them as the schema's ``Table`` / plain columns.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from procmem_core.errors import ParameterError, check_int, check_probability
from procmem_core.logs.schema import Table, Text


@dataclass(frozen=True)
class LogWorld:
    """The truth a simulated log is drawn from (module docstring)."""

    base: tuple[float, ...]
    lift: tuple[float, ...]
    explore_rate: float = 0.1
    logged_rate: float | None = None
    users: int = 0
    user_sd: float = 0.0
    missing: float = 0.0
    delay: float = 0.0
    unmatched: float = 0.0

    def __post_init__(self) -> None:
        if len(self.base) != len(self.lift) or not self.base:
            raise ParameterError("lift", len(self.lift), f"{len(self.base)} lifts, one per base")
        for b, d in zip(self.base, self.lift, strict=True):
            check_probability("base", b)
            check_probability("base + lift", b + d)
        check_probability("explore_rate", self.explore_rate, open_low=True, open_high=True)
        if self.logged_rate is not None:
            check_probability("logged_rate", self.logged_rate, open_high=True)
        check_int("users", self.users, minimum=0)
        check_probability("missing", self.missing, open_high=True)
        check_probability("unmatched", self.unmatched, open_high=True)
        if not (self.user_sd >= 0 and self.delay >= 0):
            raise ParameterError("user_sd/delay", (self.user_sd, self.delay), "numbers >= 0")

    @property
    def procedures(self) -> int:
        return len(self.base)

    @property
    def keys(self) -> np.ndarray:
        return np.array([f"procedure-{j:03d}" for j in range(self.procedures)])

    def true_lifts(self, offsets: np.ndarray | None = None) -> np.ndarray:
        """The lift each procedure's comparison estimates, ``(R, K)``: with users, the
        pool's mean of ``clip(b + d_u + l) - clip(b + d_u)`` (sessions draw users
        uniformly), else ``lift``."""
        b, lift = np.asarray(self.base), np.asarray(self.lift)
        if offsets is None:
            return lift[None, :]
        d = offsets[:, None, :]
        on = np.clip(b[None, :, None] + lift[None, :, None] + d, 0, 1)
        off = np.clip(b[None, :, None] + d, 0, 1)
        return (on - off).mean(axis=2)


def simulate(world: LogWorld, rng: np.random.Generator, sessions: int, replications: int = 1):
    """``replications`` logs of ``sessions`` sessions: a dict of ``(R, n)`` arrays (``top``
    -1 for no match, ``outcome`` NaN when missing, ``user`` -1 without users) and
    ``truth`` ``(R, K)``, ``offsets`` ``(R, users)``."""
    check_int("sessions", sessions, minimum=1)
    check_int("replications", replications, minimum=1)
    shape = (replications, sessions)
    k = rng.integers(0, world.procedures, size=shape)
    if world.unmatched > 0:
        k = np.where(rng.random(shape) < world.unmatched, -1, k)
    withheld = (rng.random(shape) < world.explore_rate) & (k >= 0)
    offsets, user = None, np.full(shape, -1)
    p = np.where(k >= 0, np.asarray(world.base)[k] + np.asarray(world.lift)[k] * ~withheld, 0.5)
    if world.users:
        offsets = rng.normal(0.0, world.user_sd, size=(replications, world.users))
        user = rng.integers(0, world.users, size=shape)
        p = p + np.take_along_axis(offsets, user, axis=1)
    y = (rng.random(shape) < np.clip(p, 0, 1)).astype(float)
    y[rng.random(shape) < world.missing] = np.nan
    time = np.broadcast_to(np.arange(sessions), shape)
    lag = rng.geometric(1.0 / (1.0 + world.delay), size=shape) - 1
    rated_at = np.where(np.isnan(y), np.nan, time + lag)
    rate = world.explore_rate if world.logged_rate is None else world.logged_rate
    return {
        "top": k, "withheld": withheld, "outcome": y, "user": user, "time": time,
        "rated_at": rated_at, "explore_rate": np.full(shape, rate),
        "truth": world.true_lifts(offsets) * np.ones((replications, 1)), "offsets": offsets,
    }  # fmt: skip


def log_table(world: LogWorld, draws: dict, r: int = 0, file: str = "simulated") -> Table:
    """Replication ``r`` as the schema's sessions ``Table`` (already coded: no parsing)."""
    n = draws["top"].shape[1]
    ids = Text(np.arange(n), np.array([f"s{i}" for i in range(n)], dtype=object))
    cols = {
        "session_id": ids,
        "time": draws["time"][r].astype(np.int64),
        "top_key": Text(draws["top"][r], world.keys),
        "withheld": draws["withheld"][r],
        "explore_rate": draws["explore_rate"][r],
        "outcome": draws["outcome"][r],
        "rated_at": draws["rated_at"][r],
    }
    if world.users:
        names = np.array([f"u{u}" for u in range(world.users)], dtype=object)
        cols["user_id"] = Text(draws["user"][r], names)
    return Table("sessions", file, n, cols)


def log_columns(world: LogWorld, draws: dict, r: int = 0) -> dict[str, np.ndarray]:
    """Replication ``r`` as plain columns in the schema's names and types (a writer's
    input: ``pandas.DataFrame(log_columns(...)).to_csv``)."""
    n = draws["top"].shape[1]
    top = draws["top"][r]
    out = {
        "session_id": np.char.add("s", np.arange(n).astype(str)),
        "time": draws["time"][r].astype(np.int64),
        "top_key": np.where(top >= 0, world.keys[np.maximum(top, 0)], ""),
        "withheld": draws["withheld"][r],
        "explore_rate": draws["explore_rate"][r],
        "outcome": draws["outcome"][r],
        "rated_at": draws["rated_at"][r],
    }
    if world.users:
        out["user_id"] = np.char.add("u", draws["user"][r].astype(str))
    return out


def explore_log(
    who: np.ndarray,
    shown: np.ndarray,
    signal: np.ndarray,
    arrived: np.ndarray,
    explore_rate: float,
    delay: int,
    truth: np.ndarray,
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """The explore scenario's replications ``(R, n)`` as one session log: replication
    ``r`` is procedure ``explore-<r>`` top-matched in each of its sessions, its users
    ``r<r>-u<u>``; a rating that did not arrive is empty, one that did arrives ``delay``
    sessions later. Returns the sessions' columns and the truth (key, true lift)."""
    reps, n = shown.shape
    r = np.repeat(np.arange(reps), n)
    t = np.tile(np.arange(n), reps)
    keys = np.char.add("explore-", np.char.zfill(np.arange(reps).astype(str), 4))
    rated = arrived.ravel()
    outcome = np.where(rated, signal.ravel().astype(float), np.nan)
    prefix = np.char.add(np.char.add("r", r.astype(str)), "-")
    columns = {
        "session_id": np.char.add(np.char.add(prefix, "s"), t.astype(str)),
        "time": t.astype(np.int64),
        "top_key": keys[r],
        "withheld": ~shown.ravel(),
        "explore_rate": np.full(r.size, explore_rate),
        "outcome": outcome,
        "user_id": np.char.add(np.char.add(prefix, "u"), who.ravel().astype(str)),
        "rated_at": np.where(rated, t + delay, np.nan),
    }
    return columns, {"key": keys, "true_lift": np.asarray(truth, dtype=float)}
