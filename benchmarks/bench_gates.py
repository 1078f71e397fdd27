"""Throughput of the vectorized SPRT gate against drawing the outcomes and looping ``decide``.

    .venv/bin/python benchmarks/bench_gates.py [--reps 1000000] [--runs 50]

Prints runs/s (outcome cells per second) for: drawing ``rng.random(size) < p``;
``SPRTGate.decide_batch`` with one p0, with a few dozen p0 values (per-row plug-in
estimates: table look-up path) and with a distinct p0 per row (rule evaluated per cell);
``decide`` called run by run in a Python loop. Work is done in blocks of rows, as the
simulators do, so memory stays bounded. The last line is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np

from procmem_core.gates import RevisionStats, SPRTGate

BLOCK_ROWS = 100_000


def timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=1_000_000)
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--loop-reps", type=int, default=2_000)
    args = parser.parse_args()
    gate = SPRTGate(max_runs=args.runs)
    rng = np.random.default_rng(np.random.SeedSequence(7))
    blocks = [min(BLOCK_ROWS, args.reps - lo) for lo in range(0, args.reps, BLOCK_ROWS)]
    cells = args.reps * args.runs

    draw = decide_one = decide_few = decide_many = 0.0
    for rows in blocks:
        outcomes = None

        def draw_block(rows=rows) -> None:
            nonlocal outcomes
            outcomes = rng.random((rows, args.runs)) < 0.7

        draw += timed(draw_block)
        few = gate.estimate_p0(rng.binomial(40, 0.8, size=rows), 40)
        many = rng.uniform(0.5, 0.95, size=rows)
        decide_one += timed(lambda o=outcomes: gate.decide_batch(o, 0.8))
        decide_few += timed(lambda o=outcomes, q=few: gate.decide_batch(o, q))
        decide_many += timed(lambda o=outcomes, q=many: gate.decide_batch(o, q))

    loop_outcomes = rng.random((args.loop_reps, args.runs)) < 0.7
    prior = RevisionStats(40, 32)

    def loop() -> int:
        calls = 0
        for row in loop_outcomes:
            s = 0
            for n, ok in enumerate(row, start=1):
                s += int(ok)
                calls += 1
                if gate.decide(prior, RevisionStats(n, s), p0=0.8).verdict != "continue":
                    break
        return calls

    start = time.perf_counter()
    calls = loop()
    loop_time = time.perf_counter() - start

    result = {
        "reps": args.reps,
        "runs": args.runs,
        "draw_runs_per_s": cells / draw,
        "batch_one_p0_runs_per_s": cells / decide_one,
        "batch_few_p0_runs_per_s": cells / decide_few,
        "batch_many_p0_runs_per_s": cells / decide_many,
        "loop_decide_calls_per_s": calls / loop_time,
        "batch_one_p0_over_draw_time": decide_one / draw,
        "batch_few_p0_over_draw_time": decide_few / draw,
        "batch_many_p0_over_draw_time": decide_many / draw,
        "batch_one_p0_speedup_over_loop": (cells / decide_one) / (calls / loop_time),
    }
    for key, value in result.items():
        print(f"{key:34s} {value:,.3f}" if isinstance(value, float) else f"{key:34s} {value}")
    print(json.dumps(result))


if __name__ == "__main__":
    main()
