"""The worked example's log: ``python -m experiments.analyze.example examples/session_log``.

Sessions from a known world (``simulators.session_log.LogWorld``: 8 procedures, lifts from
-0.10 to +0.15, 4,000 sessions of 120 users, explore rate 0.1, 10 % ratings missing,
delay 2) and a ledger that a real ``ProcedureStore`` wrote: for 4 of the procedures a
prior of 20-30 runs, one revision proposed, its runs (30 % of them served by the prior
concurrently) and ``evolve`` with the seed's SPRT after each, until it decided. The
revisions' verdicts are the store's. Seeded: the same command writes the same files.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from procmem_core.graph import ProcedureGraph, ProcedureStore
from simulators.session_log import LogWorld, log_columns, simulate

WORLD = LogWorld(
    base=(0.55, 0.60, 0.50, 0.65, 0.45, 0.70, 0.50, 0.60),
    lift=(0.15, 0.10, 0.05, 0.00, 0.00, -0.05, -0.10, 0.12),
    explore_rate=0.1, users=120, user_sd=0.08, missing=0.1, delay=2.0,
)  # fmt: skip
SESSIONS = 4_000
STEPS = ["read the request", "look up the record", "answer"]


def ledger(rng: np.random.Generator, procedures: int = 4) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Runs and revisions of a store driven through one revision per procedure."""
    store = ProcedureStore()
    runs, revisions = [], []
    variant = ProcedureGraph.from_steps([*STEPS[:2], "answer with the record's link"])
    for j in range(procedures):
        key = store.add(f"procedure {j}", f"situation {j}", STEPS).key
        p_prior, p_rev = 0.8, (0.85, 0.55, 0.8, 0.5)[j % 4]
        for _ in range(int(rng.integers(20, 31))):
            store.record_run(key, [], ok=bool(rng.random() < p_prior))
        proposed_at = store.runs(key)[-1].run_id
        prior = store.get(key).revision
        revision = store.revise(key, variant, "link the record").revision
        for _ in range(60):
            if rng.random() < 0.3:
                store.record_run(key, [], ok=bool(rng.random() < p_prior), revision=prior)
            else:
                store.record_run(key, [], ok=bool(rng.random() < p_rev))
            if store.evolve(key).revision_outcome in ("accepted", "reverted"):
                break
        runs += [(key, str(r.revision), r.ok, r.run_id) for r in store.runs(key)]
        revisions.append((key, str(prior), "", 0, "accepted"))
        outcome = store.revisions(key)[-1].outcome
        revisions.append((key, str(revision), str(prior), proposed_at, outcome))
    return (
        pd.DataFrame(runs, columns=["key", "revision", "ok", "time"]),
        pd.DataFrame(
            revisions, columns=["key", "revision", "prior_revision", "proposed_at", "verdict"]
        ),
    )


def write_example(out: Path, seed: int = 26) -> None:
    """The example log's three CSV files in ``out``."""
    rng = np.random.default_rng(np.random.SeedSequence(seed))
    out.mkdir(parents=True, exist_ok=True)
    sessions = pd.DataFrame(log_columns(WORLD, simulate(WORLD, rng, SESSIONS)))
    sessions.to_csv(out / "sessions.csv", index=False)
    runs, revisions = ledger(rng)
    runs.to_csv(out / "runs.csv", index=False)
    revisions.to_csv(out / "revisions.csv", index=False)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m experiments.analyze.example")
    p.add_argument("out", help="directory for sessions.csv, runs.csv, revisions.csv")
    p.add_argument("--seed", type=int, default=26)
    args = p.parse_args(argv)
    write_example(Path(args.out), args.seed)
    print(f"wrote the example log to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
