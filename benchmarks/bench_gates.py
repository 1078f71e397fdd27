"""The revision gates' exact operating characteristics, and the time of one design question.

    .venv/bin/python benchmarks/bench_gates.py [--throughput]

For each gate at alpha 0.05, drop 0.15, max 50 runs (pairs for the paired gates) and
p0 in {0.5, 0.7, 0.8, 0.9}: the exact worst-case false revert over p0 in [0.05, 0.95] (a
bound between grid points; the grid maximum for p0 known), the false-revert rate, the power
and the expected runs when nothing changed and at the drop (all exact). Goals: every new
gate's worst case at most 0.05; the concurrent design at 50 pairs with power at least
STEP's (Snyder et al. 2025: about 0.38 at p0 0.5 to 0.56 at 0.9, read here as a line
between the two) and expected pairs when nothing changed at most 0.6 of STEP's 49. Then
the wall and CPU time of one design question (``design_gate``, ledger 20, concurrent share
0.5, max_runs 150; CPU time counts every BLAS thread: set ``OMP_NUM_THREADS=1`` for one
core).
``--throughput`` adds the vectorized SPRT's runs/s against drawing the outcomes and looping
``decide``. The last line is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np

from procmem_core.gates import (
    CalibratedSPRTGate,
    DesignQuestion,
    DiscordantSPRTGate,
    MixtureEGate,
    RevisionStats,
    SPRTGate,
    TwoSampleGate,
    design_gate,
    worst_case,
)

P0S = np.array([0.5, 0.7, 0.8, 0.9])
DROP = 0.15
STEP_POWER = np.interp(P0S, [0.5, 0.9], [0.38, 0.56])
STEP_PAIRS_NULL = 49.0
NEW = {"calibrated_sprt", "two_sample", "discordant_sprt", "eprocess"}
GATES = [
    ("seed SPRT, p0 known", SPRTGate(), None),
    ("seed SPRT, 20-run ledger", SPRTGate(), 20),
    ("calibrated SPRT, ledger 20", CalibratedSPRTGate(), 20),
    ("two-sample, fixed ledger 20", TwoSampleGate(design="fixed"), 20),
    ("two-sample, concurrent, ledger 20", TwoSampleGate(beta=0.4), 20),
    ("two-sample, concurrent, no ledger", TwoSampleGate(beta=0.4, ledger=0), 0),
    ("discordant SPRT (concurrent)", DiscordantSPRTGate(), 0),
    ("anytime-valid mixture (concurrent)", MixtureEGate(accept_below=0.2), 0),
]


def characteristics() -> list[dict]:
    out = []
    for label, gate, ledger in GATES:
        worst = worst_case(gate, 0.0, ledger, target=0.05 if gate.name in NEW else None)
        null = gate.operating_curve(P0S, 0.0, ledger)
        alt = gate.operating_curve(P0S, DROP, ledger)
        row = {
            "gate": label,
            "config": gate.config(),
            "worst_false_revert": worst.worst,
            "worst_false_revert_bound": worst.bound,
            "worst_at_p0": worst.at,
            "false_revert": null.p_revert.tolist(),
            "power": alt.p_revert.tolist(),
            "runs_null": null.expected_runs.tolist(),
            "runs_alt": alt.expected_runs.tolist(),
            "concurrent_prior_runs_null": null.expected_prior_runs.tolist(),
        }
        if gate.name in NEW:
            row["goal_worst_case"] = bool((worst.bound or worst.worst) <= 0.05)
        if "concurrent" in gate.designs and "fixed" not in gate.designs and gate.name != "eprocess":
            row["goal_power_vs_step"] = bool(np.all(alt.p_revert >= STEP_POWER))
            row["goal_pairs_null"] = bool(np.all(null.expected_runs <= 0.6 * STEP_PAIRS_NULL))
        out.append(row)
    return out


def design_time() -> tuple[float, float, str]:
    """Wall and CPU seconds of one design question, and its answer."""
    start, cpu = time.perf_counter(), time.process_time()
    answer = design_gate(DesignQuestion(ledger=20, concurrent=0.5, max_runs=150))
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
    best = answer.feasible[0] if answer.feasible else None
    return seconds, cpu, "infeasible" if best is None else f"{best.family} at {best.max_runs}"


def throughput(reps: int = 200_000, runs: int = 50) -> dict:
    gate = SPRTGate(max_runs=runs)
    rng = np.random.default_rng(np.random.SeedSequence(7))
    start = time.perf_counter()
    outcomes = rng.random((reps, runs)) < 0.7
    draw = time.perf_counter() - start
    start = time.perf_counter()
    gate.decide_batch(outcomes, 0.8)
    batch = time.perf_counter() - start
    start, calls = time.perf_counter(), 0
    for row in outcomes[:1000]:
        for n in range(1, runs + 1):
            calls += 1
            rev = RevisionStats(n, int(row[:n].sum()))
            if gate.decide(RevisionStats(40, 32), rev, p0=0.8).verdict != "continue":
                break
    loop = time.perf_counter() - start
    cells = reps * runs
    return {"draw_runs_per_s": cells / draw, "batch_runs_per_s": cells / batch,
            "loop_decide_calls_per_s": calls / loop}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--throughput", action="store_true")
    args = parser.parse_args()
    rows = characteristics()
    print(f"p0 = {P0S.tolist()}, drop {DROP}, alpha 0.05, max 50 runs (pairs)")
    print(f"{'gate':<36}{'worst FR':>10}{'(bound)':>9}  {'FR':<27}{'power':<27}{'E[runs] null':<25}"
          f"{'E[runs] drop'}")  # fmt: skip
    for r in rows:
        bound = (
            "" if r["worst_false_revert_bound"] is None else f"{r['worst_false_revert_bound']:.4f}"
        )
        print(
            f"{r['gate']:<36}{r['worst_false_revert']:>10.4f}{bound:>9}  "
            + " ".join(f"{x:.3f}" for x in r["false_revert"]).ljust(27)
            + " ".join(f"{x:.3f}" for x in r["power"]).ljust(27)
            + " ".join(f"{x:5.1f}" for x in r["runs_null"]).ljust(25)
            + " ".join(f"{x:5.1f}" for x in r["runs_alt"])
        )
    seconds, cpu, best = design_time()
    print(
        f"one design question (ledger 20, concurrent 0.5, max_runs 150): {seconds:.2f} s wall, "
        f"{cpu:.2f} s CPU (goal: under 2 s on one core) -> {best}"
    )
    result = {"gates": rows, "design_question_seconds": seconds,
              "design_question_cpu_seconds": cpu, "design_answer": best,
              "step_power_reference": STEP_POWER.tolist()}  # fmt: skip
    if args.throughput:
        result["throughput"] = throughput()
        for k, v in result["throughput"].items():
            print(f"{k:34s} {v:,.0f}")
    print(json.dumps(result, default=float))


if __name__ == "__main__":
    main()
