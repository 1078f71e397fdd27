"""The gate defaults, one source for every gate and the design question: the graph seed's
``gate_min_drop`` 0.15, ``gate_alpha`` 0.05, ``gate_beta`` 0.20, ``gate_max_runs`` 50,
``gate_min_runs`` 3; and procmem's own choices, which the seed does not state
(docs/seed-fidelity.md): a prior ledger of 20 runs and the p0 range 0.05-0.95 every
calibrated gate certifies by default."""

from __future__ import annotations

MIN_DROP = 0.15
ALPHA = 0.05
BETA = 0.20
MAX_RUNS = 50
MIN_RUNS = 3
LEDGER = 20
P0_LOW = 0.05
P0_HIGH = 0.95
