"""What a report sentence may claim from simulated numbers: one rule, one place.

- **Against a target** (``target_state``) a figure has three states: it *meets* the target,
  it is *within noise* of it (``|value - target| <= NOISE_Z * SE``: the sweep cannot tell
  which side it is on), or it *misses* it. An exact figure (SE 0 or unknown) is never
  within noise: it meets or misses. 0.902 ± 0.02 against 0.9 is within noise, not a pass.
- **An ordering** of options (``ordering``) is stated only where the difference exceeds
  ``NOISE_Z`` standard errors of the difference, ``sqrt(se_a^2 + se_b^2)`` (independent
  Monte Carlo estimates); otherwise the options are one tie. Sorted by value, an option
  starts a new rank only when it is beyond the noise of every option of the rank above.
- **No detectable change** (``detectable_change``) is said with the smallest change the
  read could have detected: at two-sided level 0.05 and power 0.8 from the observed SE
  over ``n`` replications, ``(t(0.975, n - 1) + t(0.8, n - 1)) * SE`` (the usual
  minimum detectable effect, Student-t because the SE is estimated; e.g. Bloom 1995,
  "Minimum detectable effects", Evaluation Review 19(5)).
- **Curves that coincide** (``coinciding``): two curves on the same x values that differ
  by at most ``COINCIDE_TOL`` everywhere are drawn one over the other; a figure draws
  them distinguishably (``OVERLAY_STYLES``) and its caption says they coincide
  (``coincide_note``), so a hidden curve is never read as missing.
- **Sessions to calendar time** (``calendar``): ``days = sessions / sessions_per_day``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats

from procmem_core.errors import check_int, check_number
from procmem_core.metric import fmt
from reports.evidence import NOISE_Z


def spoken_list(items: Sequence[str]) -> str:
    """``"a"``, ``"a and b"``, ``"a, b and c"``: items as a sentence lists them."""
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


MEETS = "meets"
WITHIN_NOISE = "within noise"
MISSES = "misses"
STATES = (MEETS, WITHIN_NOISE, MISSES)
COINCIDE_TOL = 0.005
"""Largest gap (in the y unit, e.g. a probability) at which two curves read as one line."""
OVERLAY_STYLES = ((None, None), ("--", "x"), (":", "+"), ("-.", "1"))
"""(linestyle, marker) per member of a coinciding group: the first keeps its own style."""
MDE_POWER = 0.8
MDE_LEVEL = 0.05


def _se(se: float | None) -> float:
    return 0.0 if se is None or math.isnan(float(se)) else abs(float(se))


def target_state(value: float, se: float | None, target: float, higher_is_better: bool) -> str:
    """``meets``, ``within noise`` (``|value - target| <= NOISE_Z * se``, se > 0) or
    ``misses`` (module docstring); a missing value misses."""
    if value is None or math.isnan(float(value)):
        return MISSES
    s = _se(se)
    if s > 0 and abs(float(value) - target) <= NOISE_Z * s:
        return WITHIN_NOISE
    ok = value >= target if higher_is_better else value <= target
    return MEETS if ok else MISSES


def joint_state(states: Sequence[str]) -> str:
    """Several targets together: misses if any misses, meets if all meet, else within noise."""
    if any(s == MISSES for s in states):
        return MISSES
    return MEETS if all(s == MEETS for s in states) else WITHIN_NOISE


def state_words(state: str) -> str:
    """A state as a table cell reads it."""
    words = {MEETS: "meets", WITHIN_NOISE: f"within {NOISE_Z:g} SE", MISSES: "misses"}
    return words[state]


@dataclass(frozen=True)
class Option:
    """One option of an ordering: its name, its value and the value's SE (0: exact)."""

    name: str
    value: float
    se: float = 0.0


def beyond_noise(a: Option, b: Option) -> bool:
    """``|a - b| > NOISE_Z * sqrt(se_a^2 + se_b^2)``."""
    return abs(a.value - b.value) > NOISE_Z * math.hypot(_se(a.se), _se(b.se))


def ranks(options: Sequence[Option], higher_first: bool = True) -> list[list[Option]]:
    """Options in ranks, best first: sorted by value, an option opens a new rank only when it
    differs beyond the noise from every option of the current rank, else it joins it. Two
    ranks with a pair within the noise of each other (a noisy option that joined a lower
    rank can sit within the noise of a higher one) merge, with every rank between them, so
    each option of a rank is beyond the noise of each option of every other rank."""
    ordered = sorted(options, key=lambda o: -o.value if higher_first else o.value)
    out: list[list[Option]] = []
    for o in ordered:
        if out and not all(beyond_noise(o, p) for p in out[-1]):
            out[-1].append(o)
        else:
            out.append([o])
    merged = True
    while merged:
        merged = False
        for i in range(len(out)):
            j = max(
                (j for j in range(i + 1, len(out)) for a in out[i] for b in out[j]
                 if not beyond_noise(a, b)),
                default=None,
            )  # fmt: skip
            if j is not None:
                out[i : j + 1] = [[o for g in out[i : j + 1] for o in g]]
                merged = True
                break
    return out


def ordering(
    options: Sequence[Option],
    higher_first: bool = True,
    show: Callable[[Option], str] | None = None,
) -> str:
    """The options as a sentence fragment: ranks joined by " > " (or " < "), a rank of
    several read as a tie: ``"cuped 0.358 ± 0.015, aipw 0.355 ± 0.015 and dim 0.349 ±
    0.015 (a tie: no difference exceeds 2 SE of the difference)"``."""
    show = show or (lambda o: f"{o.name} {fmt(o.value, o.se or None)}")
    groups = ranks(options, higher_first)
    texts = []
    for g in groups:
        names = [show(o) for o in g]
        text = spoken_list(names)
        texts.append(f"{text} (tied)" if len(g) > 1 and len(groups) > 1 else text)
    sign = " > " if higher_first else " < "
    if len(groups) == 1 and len(options) > 1:
        if any(beyond_noise(a, b) for i, a in enumerate(options) for b in options[i + 1 :]):
            why = (  # a chain of ties: the ends differ, but no rank can be split off
                "the noise cannot split them into ranks whose every pair differs by more "
                f"than {NOISE_Z:g} SE of the difference"
            )
        else:
            why = f"no difference exceeds {NOISE_Z:g} SE of the difference"
        return f"{texts[0]} (a tie: {why})"
    return sign.join(texts)


def detectable_change(se: float, replications: int, level: float = MDE_LEVEL) -> float:
    """The smallest true change a two-sided ``level`` read over ``replications`` would
    detect with probability ``MDE_POWER``: ``(t(1 - level/2, n-1) + t(0.8, n-1)) * SE``;
    NaN below 2 replications or without an SE."""
    n = check_int("replications", replications, minimum=0)  # 2.5 was read as 2
    check_number("level", level, minimum=0.0, maximum=1.0, open_low=True)
    if n < 2 or se is None or math.isnan(float(se)):
        return float("nan")
    df = n - 1
    t_a = float(stats.t.ppf(1.0 - level / 2.0, df))
    t_b = float(stats.t.ppf(MDE_POWER, df))
    return (t_a + t_b) * abs(float(se))


def calendar(sessions: float | Sequence[float], sessions_per_day: float) -> str:
    """``"2.4 days at 100 sessions/day"``: the calendar time ``sessions`` take
    (``sessions / sessions_per_day``); several counts read ``"1.23 and 1.72 days at ..."``."""
    per_day = check_number("sessions_per_day", sessions_per_day, minimum=0.0, open_low=True)
    counts = [sessions] if np.ndim(sessions) == 0 else list(sessions)  # numpy scalars too
    days = " and ".join(f"{float(s) / per_day:.3g}" for s in counts)
    return f"{days} days at {sessions_per_day:g} sessions/day"


def coinciding(curves: dict[str, Sequence[float]], tol: float = COINCIDE_TOL) -> list[tuple]:
    """Groups (of two or more labels, in the given order) whose curves, given on the same
    x values, differ by at most ``tol`` at every x (NaN-free values compared)."""
    groups: list[list[str]] = []
    for name, ys in curves.items():
        y = np.asarray(ys, dtype=float)
        for g in groups:
            first = np.asarray(curves[g[0]], dtype=float)
            both = np.isfinite(first) & np.isfinite(y)
            if len(first) == len(y) and both.any() and np.abs(first - y)[both].max() <= tol:
                g.append(name)
                break
        else:
            groups.append([name])
    return [tuple(g) for g in groups if len(g) > 1]


def overlay_style(name: str, groups: list[tuple]) -> dict:
    """The ``linestyle``/``marker`` a coinciding curve is drawn with (``OVERLAY_STYLES``);
    ``{}`` for a curve that coincides with none, or the first of its group."""
    for g in groups:
        if name in g:
            line, marker = OVERLAY_STYLES[min(g.index(name), len(OVERLAY_STYLES) - 1)]
            return {} if line is None else {"linestyle": line, "marker": marker, "markevery": 7}
    return {}


def coincide_note(
    groups: list[tuple], what: str = "curves", how: str = "its own dash and marker"
) -> str:
    """``" The curves of A and B coincide (within 0.005): drawn one over the other, the
    later dashed."``; "" when nothing coincides."""
    if not groups:
        return ""
    parts = ["; ".join(" and ".join(g) for g in groups)]
    return (
        f" The {what} of {parts[0]} coincide (within {COINCIDE_TOL:g} of the axis everywhere): "
        f"drawn one over the other, each later one with {how}."
    )
