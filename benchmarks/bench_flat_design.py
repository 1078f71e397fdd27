"""The CPU time of one flat design question (``design_rule``, the confidence family in the
seed's float arithmetic), side by side with an earlier commit in the same run.

    .venv/bin/python benchmarks/bench_flat_design.py [--repeats N] [--baseline COMMIT]

Each question runs from cold caches (no calibration file store) in a fresh interpreter on
one core, here and then in a temporary worktree of ``BASELINE`` (``worktree_baseline``),
the least CPU time of ``--repeats`` runs each. Besides the times it prints a digest of the
answer (``repr`` of the ``RuleDesign``: every figure of the pick, the frontier, the
reference and the shortest horizon, floats at full precision) and of the candidate table
(every candidate's kept, excluded and harmful sessions, their bytes): equal digests mean
bit-identical answers. The questions are those the test suite asks most (the design tests'
targets within 30 and 60 sessions, and the answers' loose targets within 20). The last
line is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import math

from worktree_baseline import ONE_CORE, ROOT, baseline_tree, cpu_model, run_json

from procmem_core.gates.calibration_store import CACHE_ENV

BASELINE = "f16dce3"
"""main before the flat design's lockstep spaces and the excursions' merge (issue 24)."""

QUESTIONS = {
    "within 30, keep/exclude 0.9 (infeasible)": [0.10, -0.10, 0.6, 0.9, 0.9, 30],
    "within 60, keep/exclude 0.9": [0.10, -0.10, 0.6, 0.9, 0.9, 60],
    "within 20, keep 0.2, exclude 0.5": [0.10, -0.10, 0.6, 0.2, 0.5, 20],
}
"""``RuleTargets(helpful_lift, harmful_lift, base, keep, exclude, within)`` per label."""

TIMER = """
import hashlib, json, sys, time
from procmem_core.flat import design
from procmem_core.flat.targets import RuleTargets
t = RuleTargets(*json.loads(sys.argv[1]))
wall, cpu = time.perf_counter(), time.process_time()
d = design.design_rule(t, "confidence")
cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
_, table, _ = design._table(t, "confidence")
cols = b"".join(getattr(table, f).tobytes() for f in ("kept", "excluded", "sessions"))
print(json.dumps({"cpu": cpu, "wall": wall, "pick": d.pick.describe(),
                  "answer": hashlib.sha256(repr(d).encode()).hexdigest()[:16],
                  "table": hashlib.sha256(cols).hexdigest()[:16]}))
"""


def _least(root, args: list[str], repeats: int) -> dict:
    """The run with the least CPU time of ``repeats`` fresh-interpreter runs."""
    env = {**ONE_CORE, CACHE_ENV: ""}  # no file store: each run computes (cold)
    return min((run_json(root, TIMER, args, env) for _ in range(repeats)), key=lambda r: r["cpu"])


def flat_times(baseline: str = BASELINE, repeats: int = 1) -> list[dict]:
    """Every question of ``QUESTIONS`` here and at ``baseline``, one after the other."""
    rows = []
    with baseline_tree(baseline) as tree:
        for label, targets in QUESTIONS.items():
            args = [json.dumps(targets)]
            here = _least(ROOT, args, repeats)
            base = _least(tree, args, repeats) if tree else None
            before = base["cpu"] if base else math.nan
            rows.append({"question": label, "cpu_seconds": here["cpu"],
                         "wall_seconds": here["wall"], "cpu_seconds_before": before,
                         "cpu_ratio": before / here["cpu"], "pick": here["pick"],
                         "identical": bool(base) and all(
                             here[k] == base[k] for k in ("answer", "table"))})  # fmt: skip
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--baseline", default=BASELINE)
    args = parser.parse_args()
    rows = flat_times(args.baseline, args.repeats)
    print(f"one flat design question (confidence family, float arithmetic), cold, one core, "
          f"side by side against {args.baseline}, on {cpu_model()}:")  # fmt: skip
    for r in rows:
        same = "bit-identical answer and table" if r["identical"] else "ANSWERS DIFFER"
        print(f"  {r['question']:<42} {r['cpu_seconds']:6.2f} s CPU, before "
              f"{r['cpu_seconds_before']:6.2f} s, x{r['cpu_ratio']:.2f} ({same})")  # fmt: skip
    print(json.dumps({"flat_design": rows}))


if __name__ == "__main__":
    main()
