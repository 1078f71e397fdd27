"""Calibration blocks: more simulated-vs-exact figures, each from replications of its own.

A report checks a sweep's standard errors by the z-scores of its simulated-vs-exact
pairs (``reports.calibration``): over ``n`` pairs, ``n mean(z^2)`` is read as chi-square
with ``n`` degrees of freedom and the tail counts as Binomial, which holds for independent
z-scores. A flat procedure's fate is exact at every horizon, but figures at several
horizons from the same replications are not independent: "excluded by session s" implies
"excluded by session t > s", so the two indicators correlate by
``sqrt(P_s (1 - P_t) / ((1 - P_s) P_t))`` (0.81 for sessions 10 and 20 of a procedure at
p = 0.7 under the seed's rule), and ``Var(sum z^2) = 2 sum_ij rho_ij^2`` exceeds the
chi-square's ``2 n``: the check's interval would be too narrow.

So each added figure comes from a block of ``calibration_replications`` fresh
replications: the scenario re-run at horizon ``h`` (``sessions = h``) from a seed of its
own (``block_seed``: the ``i``-th calibration child of the job's seed, disjoint from the
chunk children the job's own replications draw from). No block shares a replication with
another block or with the job's whole-sample figures, so the added z-scores are
independent of each other and of every other pair. The figure and its SE are the re-run's
own, its exact value the re-run's ``exact_metrics()`` (the same simulation and the same
exact code at horizon ``h``), logged as ``cal<i>_<metric>_s<h>`` (``figure_name``). A
scenario whose ``run`` does costly work no block figure reads (the reflections scenario's
model calls) gives a ``calibration_run(seed)`` that simulates the same replications and
logs the block figures without it; the blocks run that instead.

Which figures (each scenario's ``block_figures()``, by ``pick_figures``): the candidates
are ``(metric, h)`` for the scenario's horizons (default ``h = 1 .. sessions``) and the
given metrics. A share qualifies when its exact value is within ``[FLOOR, 1 - FLOOR]``
(near 0 or 1 a share's z is skewed, and at 0 or 1 its SE is 0 and says nothing); a
metric that is not a share (``bounded=False``: a mean count, a difference) when its
exact value is finite. The ``calibration_blocks`` figures are spread evenly over the
qualifying list in its order (``i * len // blocks``), each candidate repeated in turn, in
independent blocks, when there are more blocks than candidates. Outside the exact regime
nothing is added.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from procmem_core.logged import CalibrationFigure as Figure
from procmem_core.logged import figure_name, parse_name
from simulators.replication import CHUNK_LISTENER, check_seed

FLOOR = 0.05
"""A share qualifies as a calibration figure when its exact value is in [FLOOR, 1 - FLOOR]."""
BLOCK_KEY = 0xCA1
"""First spawn-key entry of the calibration blocks' seeds (the chunks use ``(i,)``)."""


def block_seed(seed: int, index: int) -> int:
    """The seed of calibration block ``index``: drawn from
    ``SeedSequence(seed, spawn_key=(BLOCK_KEY, index))``, a stream no chunk of the job uses."""
    ss = np.random.SeedSequence(check_seed(seed), spawn_key=(BLOCK_KEY, index))
    return int(ss.generate_state(1, np.uint64)[0])


def at_horizon(scenario: Any, sessions: int, replications: int | None = None) -> Any:
    """The scenario over ``sessions`` sessions (and ``replications``), without blocks."""
    reps = scenario.replications if replications is None else replications
    return replace(scenario, sessions=sessions, replications=reps, calibration_blocks=0)


def pick_figures(
    scenario: Any,
    metrics: Sequence[str],
    *,
    horizons: Iterable[int] | None = None,
    bounded: bool = True,
) -> list[Figure]:
    """The scenario's ``calibration_blocks`` figures, spread evenly over the qualifying
    ``(metric, h)`` candidates, ``h`` in ``horizons`` (default ``1 .. sessions``); shares
    qualify within ``[FLOOR, 1 - FLOOR]``, with ``bounded=False`` any finite exact value
    does (module docstring); [] outside the exact regime."""
    blocks = int(scenario.calibration_blocks)
    if blocks == 0 or not scenario.exact_regime:
        return []
    hs = range(1, scenario.sessions + 1) if horizons is None else horizons
    ok = []
    for h in hs:
        exact = at_horizon(scenario, h).exact_metrics()
        for m in metrics:
            e = exact.get(f"{m}_exact", np.nan)
            if (FLOOR <= e <= 1.0 - FLOOR) if bounded else np.isfinite(e):
                ok.append(Figure(m, h))
    if not ok:
        return []
    return [ok[i * len(ok) // blocks] for i in range(blocks)]


def calibration_metrics(scenario: Any, seed: int) -> dict[str, float]:
    """Each of ``scenario.block_figures()`` from its own block: ``{name, name_se,
    name_exact}`` per block.

    ``scenario`` has ``sessions``, ``replications``, ``calibration_blocks``,
    ``calibration_replications``, ``exact_metrics()`` and ``block_figures()``; its
    ``calibration_run(seed)`` if it has one, else its ``run(seed)``, logs ``<metric>`` and
    ``<metric>_se``; when it also logs ``<metric>_diff_se`` (an exact figure that is an
    expectation given what the block's replications drew: the loop's lift), its
    ``_exact``, ``_diff_se`` and ``_diff_n`` are the block's own. The blocks' chunks are
    not reported to a progress listener (they are not the job's chunks)."""
    out: dict[str, float] = {}
    figures = scenario.block_figures()
    token = CHUNK_LISTENER.set(None)
    try:
        for i, figure in enumerate(figures):
            block = at_horizon(scenario, figure.sessions, scenario.calibration_replications)
            run = getattr(block, "calibration_run", block.run)
            got = run(block_seed(seed, i)).metrics
            name = figure_name(i, figure)
            out[name] = float(got[figure.metric])
            out[name + "_se"] = float(got[figure.metric + "_se"])
            if figure.metric + "_diff_se" in got:  # an exact figure of the block's own draws
                for suffix in ("_exact", "_diff_se", "_diff_n"):
                    out[name + suffix] = float(got[figure.metric + suffix])
            else:
                out[name + "_exact"] = float(block.exact_metrics()[figure.metric + "_exact"])
    finally:
        CHUNK_LISTENER.reset(token)
    return out


def block_units(scenario: Any, longest: int | None = None) -> float:
    """Replication-sessions the blocks add at most (each block at most ``longest`` sessions
    long, by default the scenario's ``sessions``)."""
    h = scenario.sessions if longest is None else longest
    return float(scenario.calibration_blocks * scenario.calibration_replications) * float(h)


__all__ = [
    "FLOOR",
    "Figure",
    "at_horizon",
    "block_seed",
    "block_units",
    "calibration_metrics",
    "figure_name",
    "parse_name",
    "pick_figures",
]
