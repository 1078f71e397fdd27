"""The revision gates' exact operating characteristics, and the time of one design question.

    .venv/bin/python benchmarks/bench_gates.py [--throughput]

For each gate at alpha 0.05, drop 0.15, max 50 runs (pairs for the paired gates) and
p0 in {0.5, 0.7, 0.8, 0.9}: the exact worst-case false revert over p0 in [0.05, 0.95] (a
bound between grid points; the grid maximum for p0 known), the false-revert rate, the power
and the expected runs when nothing changed and at the drop (all exact). Goals: every new
gate's worst case at most 0.05; the concurrent design at 50 pairs with power at least
STEP's (Snyder et al. 2025: about 0.38 at p0 0.5 to 0.56 at 0.9, read here as a line
between the two) and expected pairs when nothing changed at most 0.6 of STEP's 49. Then
the wall and CPU time of one design question from cold caches (``design_gate`` at
max_runs 200: the quickstart's, ledger 20 and share 0.5, and fixed-ledger questions with
ledgers 20, 50 and 100), on one core (``OMP_NUM_THREADS=1``), each in a fresh interpreter,
measured side by side in the same run with the code before issue 28's sixth speed-up:
commit ``DESIGN_BASELINE`` (f16dce3; the first speed-up was measured against 2915019, the
second against 6de0adb, the third against ac6af6b, the fourth against 9593533, the fifth
against 605fa21) is
checked out into a temporary git worktree (removed afterwards; ``worktree_baseline``,
shared with ``bench_simulators``) and each question runs there right after it runs here
(CPU seconds, their ratio, both answers; ``--repeats N`` takes the least of N runs of
each, the machine being shared). Then the gate
the quickstart's question prescribes beside STEP's
reference figures (Snyder et al. 2025, quoted: at 157 pairs and alpha 0.05 about 153 pairs
when nothing changed, power 0.795-0.955 at a drop of 0.15 for p0 0.3-0.9), with the design
at STEP's 157 pairs too.
``--throughput`` adds the vectorized SPRT's runs/s against drawing the outcomes and looping
``decide``. The last line is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import math
import time

import numpy as np
from worktree_baseline import ONE_CORE, ROOT, baseline_tree, cpu_model, run_json

from procmem_core.gates import (
    CalibratedSPRTGate,
    DesignQuestion,
    DiscordantSPRTGate,
    MixtureEGate,
    RevisionStats,
    SPRTGate,
    TwoSampleGate,
    design_gate,
    make_gate,
    worst_case,
)
from procmem_core.gates.calibration_store import CACHE_ENV
from procmem_core.gates.early_stop import null_runs_bound, null_runs_ceiling

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


QUICKSTART = DesignQuestion(ledger=20, concurrent=0.5, max_runs=200)
STEP_SOURCE = (
    "Snyder et al. 2025 (STEP, the exact sequential 2x2 test), as measured in issue 28 and "
    "docs/statistics.md; quoted: STEP's package is not used (non-commercial licence)"
)
STEP = {
    "n_max": 157,
    "alpha": 0.05,
    "pairs_null": 153.0,
    "power_low": 0.795,
    "power_high": 0.955,
    "p0": (0.3, 0.9),
    "drop": 0.15,
    "source": STEP_SOURCE,
}
SIDE_P0S = np.array([0.3, 0.5, 0.7, 0.9])


TIMED = {
    "quickstart (ledger 20, share 0.5)": QUICKSTART,
    "fixed ledger 20": DesignQuestion(ledger=20, concurrent=0.0, max_runs=200),
    "fixed ledger 50": DesignQuestion(ledger=50, concurrent=0.0, max_runs=200),
    "fixed ledger 100": DesignQuestion(ledger=100, concurrent=0.0, max_runs=200),
    "alpha 0.1, beta 0.1 (ledger 20, 0.5)": DesignQuestion(
        alpha=0.1, beta=0.1, ledger=20, concurrent=0.5, max_runs=200
    ),
}
"""The design questions timed (max_runs 200, the issue's p0 range [0.3, 0.95])."""
DESIGN_BASELINE = "f16dce3"
"""The code before issue 28's sixth speed-up, timed beside this checkout in the same run."""
DESIGN_TIMER = """
import json, sys, time
from procmem_core.gates import DesignQuestion, design_gate
fields = json.loads(sys.argv[1])
question = DesignQuestion(**{k: tuple(v) if isinstance(v, list) else v for k, v in fields.items()})
start, cpu = time.perf_counter(), time.process_time()
design = design_gate(question)
wall, cpu = time.perf_counter() - start, time.process_time() - cpu
pick = design.feasible[0] if design.feasible else None
answer = "infeasible" if pick is None else f"{pick.family} ({pick.design}) at {pick.max_runs}"
print(json.dumps({"wall": wall, "cpu": cpu, "answer": answer}))
"""
"""One design question from cold caches (a fresh interpreter), timed in wall and CPU
seconds, with the family it prescribes."""


def cold() -> None:
    """Drop the calibrations, design answers and lattice statistics cached by earlier
    questions (a fresh, empty calibration store too), so that every question is timed
    from scratch."""
    from procmem_core.gates import (
        calibrate,
        calibrated_sprt,
        calibration_store,
        lattice_gate,
        paired,
        paired_cells,
        two_sample,
        two_sample_exact,
        twostats,
    )
    from procmem_core.gates.ledger_bound import _power_bound

    calibration_store.install(calibration_store.MemoryStore())

    two_sample._calibrated.cache_clear()
    calibrated_sprt._calibrated.cache_clear()
    twostats._lattice_statistics.cache_clear()
    _power_bound.cache_clear()
    for remembered in (two_sample_exact.HALF_MASSES, paired.PAIR_MASSES,
                       paired_cells.CELL_TABLES, lattice_gate.LEDGER_MASSES,
                       calibrate.TRIALS, calibrated_sprt.STATISTICS,
                       two_sample.UNCAPPED):  # fmt: skip
        remembered.clear()


def design_time(question: DesignQuestion = QUICKSTART):
    """Wall and CPU seconds of one design question from cold caches, and its answers."""
    cold()
    start, cpu = time.perf_counter(), time.process_time()
    answer = design_gate(question)
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
    return seconds, cpu, answer


def _least(root, arg: list[str], repeats: int) -> dict:
    """The run with the least CPU time of ``repeats`` fresh-interpreter runs."""
    cold_store = {**ONE_CORE, CACHE_ENV: ""}  # no file store: each run computes (cold)
    runs = [run_json(root, DESIGN_TIMER, arg, cold_store) for _ in range(repeats)]
    return min(runs, key=lambda r: r["cpu"])


def design_times(baseline: str = DESIGN_BASELINE, repeats: int = 1) -> list[dict]:
    """Every question of ``TIMED`` on one core, from cold caches, with this checkout and
    with commit ``baseline`` (a temporary worktree, ``worktree_baseline``), one after the
    other per question in fresh interpreters (the least of ``repeats`` runs each): seconds,
    the ratio and both answers (NaN and None for the baseline when it cannot be checked
    out)."""
    rows = []
    with baseline_tree(baseline) as tree:
        for label, question in TIMED.items():
            arg = [json.dumps(question.__dict__)]
            here = _least(ROOT, arg, repeats)
            base = _least(tree, arg, repeats) if tree else None
            before = base["cpu"] if base else math.nan
            rows.append({"question": label, "wall_seconds": here["wall"],
                         "cpu_seconds": here["cpu"], "answer": here["answer"],
                         "wall_seconds_before": base["wall"] if base else math.nan,
                         "cpu_seconds_before": before, "cpu_ratio": before / here["cpu"],
                         "answer_before": base["answer"] if base else None,
                         "goal_2s": here["cpu"] <= 2.0})  # fmt: skip
    return rows


def print_design_times(rows: list[dict]) -> None:
    print(f"\none design question, max_runs 200, from cold caches, on one core, measured side "
          f"by side in this run against commit {DESIGN_BASELINE} (before issue 28's sixth "
          f"speed-up; goal: at most 2 s), on {cpu_model()}:")  # fmt: skip
    for r in rows:
        same = (
            "same answer" if r["answer"] == r["answer_before"] else f"before: {r['answer_before']}"
        )
        print(f"  {r['question']:<37} {r['cpu_seconds']:6.2f} s CPU ({r['wall_seconds']:6.2f} s "
              f"wall), before {r['cpu_seconds_before']:6.2f} s CPU ({r['wall_seconds_before']:6.2f}"
              f" s wall), x{r['cpu_ratio']:.2f} -> {r['answer']} ({same})")  # fmt: skip


def side_by_side(design) -> list[dict]:
    """The prescribed gate, and the design at STEP's 157 pairs, beside STEP's figures: worst
    false revert (bound), power at the drop, expected pairs when nothing changed and at the
    drop (exact at SIDE_P0S; the worst over the range bounded between grid points), the ratio
    to STEP's pairs and to the Wald-Wolfowitz bound."""
    rng = QUICKSTART.p0_range
    same_cap = design_gate(DesignQuestion(**{**QUICKSTART.__dict__, "max_runs": STEP["n_max"]}))
    rows = []
    for label, d in (("prescribed", design), (f"at STEP's {STEP['n_max']} pairs", same_cap)):
        a = next(x for x in d.answers if (x.family, x.design) == ("two_sample", "concurrent"))
        gate = make_gate(**a.config)
        null = gate.operating_curve(SIDE_P0S, 0.0, 20)
        alt = gate.operating_curve(SIDE_P0S, DROP, 20)
        worst, ceiling = null_runs_ceiling(gate, rng, 20)
        bound = null_runs_bound(gate, rng.grid(41), DROP, 20)
        rows.append({
            "gate": f"two-sample, {label}", "feasible": a.feasible, "max_runs": a.max_runs,
            "accept_level": a.config["accept_level"], "false_revert_bound": a.false_revert,
            "power_bound": a.power, "power": alt.p_revert.tolist(),
            "pairs_null": null.expected_runs.tolist(), "pairs_alt": alt.expected_runs.tolist(),
            "pairs_null_worst": worst, "pairs_null_ceiling": ceiling,
            "ratio_to_step": ceiling / STEP["pairs_null"], "ww_ratio_max": bound.worst_ratio,
            "sessions_null": sum(a.runs_null), "sessions_alt": sum(a.runs_alt),
        })  # fmt: skip
    return rows


def print_side_by_side(rows: list[dict]) -> None:
    print(f"\nquickstart question (alpha 0.05, beta 0.2, drop 0.15, ledger 20, share 0.5, p0 "
          f"0.3-0.95); p0 = {SIDE_P0S.tolist()}")  # fmt: skip
    print(f"STEP reference: n_max {STEP['n_max']}, alpha {STEP['alpha']}: about "
          f"{STEP['pairs_null']:.0f} pairs when nothing changed, power {STEP['power_low']}-"
          f"{STEP['power_high']} at a drop of 0.15 for p0 0.3-0.9 [{STEP['source']}]")  # fmt: skip
    for r in rows:
        print(
            f"{r['gate']:<32} max {r['max_runs']}, accept {r['accept_level']:.3f}: worst FR "
            f"<= {r['false_revert_bound']:.4f}, power >= {r['power_bound']:.3f} ("
            + " ".join(f"{x:.3f}" for x in r["power"])
            + "), pairs null "
            + " ".join(f"{x:.1f}" for x in r["pairs_null"])
            + " (worst <= "
            f"{r['pairs_null_ceiling']:.1f}, {r['ratio_to_step']:.2f} x STEP's 153, "
            f"{r['ww_ratio_max']:.3f} x Wald-Wolfowitz at most), pairs at drop "
            + " ".join(f"{x:.1f}" for x in r["pairs_alt"])
            + f"; sessions null {r['sessions_null']:.1f}, at drop {r['sessions_alt']:.1f}"
        )


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
    parser.add_argument(
        "--repeats",
        type=int,
        default=1,
        help="runs per design question and tree; the least CPU time is kept",
    )
    parser.add_argument(
        "--times-only",
        action="store_true",
        help="only the design questions' times, before and after",
    )
    args = parser.parse_args()
    if args.times_only:
        times = design_times(repeats=args.repeats)
        print_design_times(times)
        print(json.dumps({"design_times": times}, default=float))
        return
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
    times = design_times(repeats=args.repeats)
    print_design_times(times)
    seconds, cpu, design = design_time()
    pick = design.feasible[0] if design.feasible else None
    best = "infeasible" if pick is None else f"{pick.family} at {pick.max_runs}"
    side = side_by_side(design)
    print_side_by_side(side)
    result = {"gates": rows, "design_question_seconds": seconds,
              "design_question_cpu_seconds": cpu, "design_answer": best,
              "design_times": times,
              "step_power_reference": STEP_POWER.tolist(), "quickstart_vs_step": side,
              "step_reference": STEP}  # fmt: skip
    if args.throughput:
        result["throughput"] = throughput()
        for k, v in result["throughput"].items():
            print(f"{k:34s} {v:,.0f}")
    print(json.dumps(result, default=float))


if __name__ == "__main__":
    main()
