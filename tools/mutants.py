"""Mutation check: plant one small, plausible bug at a time and see whether the tests notice.

Each mutant is a named text edit of one engine file (every ``old`` must occur exactly
once there) and the test files that should catch it. The tree is copied once to a
temporary folder (without ``.git``, ``.venv`` and outputs); there each mutant is applied,
its test files run (``python -m pytest -x``, bytecode off so no stale ``.pyc`` hides the
edit), and the file restored. A mutant is *killed* when pytest reports a failure (exit 1)
or hits its time limit, *survived* when its tests pass, an *error* when pytest could not
run them (exit 2-5). The unmutated copy runs every listed test file first; if that fails,
nothing is counted.

Two kinds are listed but not run: *equivalent* mutants, which cannot change behaviour
(each with the reason), and *pending* ones, whose target arrives with another branch's
merge (their file is absent here; once it exists they run like the others, and a target
string that is missing then is an error, not a silent skip).

``python tools/mutants.py [--only NAME,...] [--jobs N] [--list]``; the last line printed
is one JSON object: counts, the survivors, the errors and every mutant's status.
``make mutants`` runs it (not part of ``make test``: it takes several minutes).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SKIP = {".git", ".venv", "outputs", "multirun", "mlruns", "mlartifacts", ".hypothesis"}
SKIP_SUFFIXES = (".egg-info", "_cache", "__pycache__")
RUN_LIMIT = 900  # seconds per mutant's test run; a mutant that hangs the tests is killed


@dataclass(frozen=True)
class Mutant:
    """One planted bug: ``edits`` (old, new) in ``file``, caught by ``tests``."""

    name: str
    file: str
    edits: tuple[tuple[str, str], ...]
    tests: tuple[str, ...]
    bug: str
    equivalent: str | None = None  # why it cannot change behaviour (not run, not counted)
    pending: str | None = None  # the branch that brings its target (run once ``file`` exists)


T = "tests/"
FLAT = (T + "procmem_core/flat/test_flat_rule.py", T + "procmem_core/flat/test_flat_reference.py")
GATES = (T + "procmem_core/gates/test_gates.py", T + "procmem_core/gates/test_gates_reference.py")
OPS = (T + "procmem_core/gates/test_gate_operating_points.py",)
EVOLVE = (
    T + "procmem_core/graph/test_evolve.py",
    T + "procmem_core/graph/test_evolve_reference.py",
)
AB = (T + "procmem_core/ab/test_estimators_reference.py", T + "simulators/test_sim_explore.py")
LEARNINGS = (
    T + "procmem_core/learnings/test_exact_and_policy.py",
    T + "procmem_core/learnings/test_queue.py",
)
SEQUENCES = (T + "procmem_core/ab/test_boundaries.py", T + "procmem_core/ab/test_sequential.py")

RULE = "procmem_core/flat/rule.py"
LLR = "procmem_core/gates/llr.py"
EST = "procmem_core/ab/estimators.py"

MUTANTS: tuple[Mutant, ...] = (
    # -- the flat rule (issue 19's table: the first two) --
    Mutant(
        "flat_clamp_ignores_floor_ceiling",
        RULE,
        (
            ("np.minimum(moved, self.ceiling, out=moved)", "np.minimum(moved, 1.0, out=moved)"),
            ("np.maximum(moved, self.floor, out=moved)", "np.maximum(moved, 0.0, out=moved)"),
            (
                "snap(min(self.ceiling, max(self.floor, float(confidence) + step)))",
                "snap(min(1.0, max(0.0, float(confidence) + step)))",
            ),
        ),
        (
            *FLAT,
            T + "procmem_core/flat/test_flat_fate.py",
            T + "simulators/test_sim_confidence.py",
            T + "simulators/test_sim_explore.py",
            T + "experiments/test_task_seed_demo.py",
        ),
        "ConfidenceRule(floor=0.2, ceiling=0.9) clamps to [0, 1]",
    ),
    Mutant(
        "flat_reward_times_1.1",
        RULE,
        (("return self.reward, self.penalty", "return self.reward * 1.1, self.penalty"),),
        (
            FLAT[1],
            T + "procmem_core/flat/test_flat_fate.py",
            T + "simulators/test_sim_confidence.py",
            T + "simulators/test_sim_explore.py",
        ),
        "every good session moves the confidence by 1.1 x reward",
    ),
    Mutant(
        "flat_threshold_strict",
        RULE,
        (
            (
                "np.asarray(confidence) >= threshold - THRESHOLD_TOLERANCE",
                "np.asarray(confidence) > threshold + THRESHOLD_TOLERANCE",
            ),
        ),
        FLAT,
        "a procedure exactly on the threshold is left out of the prompt",
    ),
    Mutant(
        "prompt_limit_off_by_one",
        "procmem_core/flat/prompt.py",
        (("return active & (ranks < limit)", "return active & (ranks <= limit)"),),
        FLAT,
        "the prompt shows limit + 1 procedures",
    ),
    # -- the gates (issue 19's table: ln A and the cap) --
    Mutant(
        "sprt_ln_a_is_ln_one_over_alpha",
        LLR,
        (
            (
                "return math.log((1.0 - beta) / alpha), math.log(beta / (1.0 - alpha))",
                "return math.log(1.0 / alpha), math.log(beta / (1.0 - alpha))",
            ),
        ),
        (
            T + "simulators/test_sim_gate.py",
            *EVOLVE[:1],
            T + "procmem_core/graph/test_evolve_sequential.py",
            GATES[1],
        ),
        "ln A = ln(1/alpha) instead of ln((1-beta)/alpha)",
    ),
    Mutant(
        "sprt_cap_overrides_a_boundary",
        LLR,
        (
            (
                "at_cap_cells = (runs >= max_runs) & (codes == CONTINUE_CODE)",
                "at_cap_cells = runs >= max_runs",
            ),
        ),
        (
            T + "simulators/test_sim_gate.py",
            *EVOLVE[:1],
            T + "procmem_core/graph/test_evolve_sequential.py",
            *GATES,
        ),
        "at the cap run the cap rule overrides a boundary crossed on that same run",
    ),
    Mutant(
        "sprt_min_runs_off_by_one",
        LLR,
        (("codes *= runs >= min_runs", "codes *= runs > min_runs"),),
        GATES,
        "the SPRT decides from run min_runs + 1",
    ),
    Mutant(
        "sprt_p0_not_clipped",
        LLR,
        (
            (
                "p0c = np.clip(np.asarray(p0, dtype=float), 2.0 * EPS, 1.0 - EPS)",
                "p0c = np.asarray(p0, dtype=float)",
            ),
        ),
        GATES,
        "p0 of 0 or 1 gives infinite or NaN increments",
    ),
    Mutant(
        "sprt_plugin_p0_unsmoothed",
        "procmem_core/proportions.py",
        (
            (
                "return (np.asarray(successes, dtype=float) + 1.0) / "
                "(np.asarray(runs, dtype=float) + 2.0)",
                "return np.asarray(successes, dtype=float) / np.maximum(np.asarray(runs, "
                "dtype=float), 1.0)",
            ),
        ),
        (*GATES, *OPS),
        "the plug-in p0 is the raw s/n, not Laplace's (s+1)/(n+2)",
    ),
    Mutant(
        "clopper_pearson_two_sided_level",
        "procmem_core/proportions.py",
        (
            (
                "stats.beta.ppf(alpha, safe_s, n - s + 1.0)",
                "stats.beta.ppf(alpha / 2.0, safe_s, n - s + 1.0)",
            ),
        ),
        (*GATES, *OPS),
        "the one-sided lower bound is taken at alpha/2",
    ),
    Mutant(
        "lattice_mixture_uses_raw_rate",
        "procmem_core/gates/base.py",
        (
            (
                "hats = np.asarray(self.estimate_p0(k, prior_runs), dtype=float)",
                "hats = k / max(prior_runs, 1)",
            ),
        ),
        (*GATES, *OPS),
        "the exact mixture over the prior ledger ignores the gate's own p0 estimator",
    ),
    Mutant(
        "lattice_runs_counted_one_short",
        "procmem_core/gates/lattice.py",
        (("runs += n * (a + b)", "runs += (n - 1) * (a + b)"),),
        (*GATES, *OPS),
        "the exact expected runs count a decision at run n as n - 1",
    ),
    Mutant(
        "margin_equality_reverts",
        "procmem_core/gates/margin.py",
        (
            (
                "revert = np.asarray(gap > self.margin + MARGIN_TOLERANCE)",
                "revert = np.asarray(gap >= self.margin - MARGIN_TOLERANCE)",
            ),
        ),
        GATES,
        "a drop of exactly the margin reverts",
    ),
    Mutant(
        "margin_min_runs_off_by_one",
        "procmem_core/gates/margin.py",
        (("revert &= runs >= self.min_runs", "revert &= runs > self.min_runs"),),
        GATES,
        "the margin gate reverts from run min_runs + 1",
    ),
    Mutant(
        "cost_gate_ignores_prior_samples",
        "procmem_core/gates/cost.py",
        (
            (
                "enough = (k1 >= self.min_samples) & (k0 >= self.min_samples)",
                "enough = k1 >= self.min_samples",
            ),
        ),
        GATES,
        "the vectorized cost gate compares with a prior of too few costed successes",
    ),
    Mutant(
        "cost_gate_tolerance_inclusive",
        "procmem_core/gates/cost.py",
        (
            (
                "if m1 > m0 * (1.0 + self.tolerance):",
                "if m1 >= m0 * (1.0 + self.tolerance):",
            ),
        ),
        GATES,
        "a cost exactly at the tolerance reverts",
    ),
    # -- evolve and quarantine (issue 19's table: the template bar) --
    Mutant(
        "template_while_revision_pending",
        "procmem_core/graph/evolve.py",
        (
            (
                "stable = state.stable_runs >= min_runs and entry.held is None",
                "stable = state.stable_runs >= min_runs",
            ),
        ),
        (
            *EVOLVE,
            T + "procmem_core/graph/test_store.py",
            T + "procmem_core/graph/test_ledger.py",
            T + "simulators/test_sim_loop.py",
            T + "procmem_core/graph/test_match.py",
        ),
        "a procedure becomes a template while a revision is pending",
    ),
    Mutant(
        "template_stability_off_by_one",
        "procmem_core/graph/evolve.py",
        (
            (
                "stable = state.stable_runs >= min_runs and entry.held is None",
                "stable = state.stable_runs > min_runs and entry.held is None",
            ),
        ),
        EVOLVE,
        "the topology must be stable for min_runs + 1 runs",
    ),
    Mutant(
        "template_rate_strict",
        "procmem_core/graph/status.py",
        (("rate_ok = s >= TEMPLATE_MIN_RATE * n", "rate_ok = s > TEMPLATE_MIN_RATE * n"),),
        EVOLVE,
        "a success rate of exactly 0.8 misses the template bar",
    ),
    Mutant(
        "failure_streak_never_resets",
        "procmem_core/graph/ledger.py",
        (
            (
                "self.failure_streak = 0 if run.ok else self.failure_streak + 1",
                "self.failure_streak = self.failure_streak if run.ok else self.failure_streak + 1",
            ),
        ),
        EVOLVE,
        "a success does not reset the failure streak",
    ),
    Mutant(
        "quarantine_off_by_one",
        "procmem_core/graph/status.py",
        (
            (
                "np.asarray(failure_streak) >= max(strike_limit, 1)",
                "np.asarray(failure_streak) > max(strike_limit, 1)",
            ),
        ),
        EVOLVE,
        "quarantine needs strike_limit + 1 failures",
    ),
    # -- the estimators (issue 19's table: the Hajek SE) --
    Mutant(
        "hajek_se_without_1_over_m",
        EST,
        (
            (
                "c1 * w1 * (y - mu1[:, None]) / m1[:, None] - c0 * w0 * (y - mu0[:, None]) "
                "/ m0[:, None]",
                "c1 * w1 * (y - mu1[:, None]) - c0 * w0 * (y - mu0[:, None])",
            ),
        ),
        (*AB, T + "experiments/test_exp_config.py"),
        "the Hajek SE without its 1/m normalisation",
    ),
    Mutant(
        "hajek_se_without_hc1",
        EST,
        (
            ("c1 = _dof(shown & mask, 1)[:, None]", "c1 = 1.0"),
            ("c0 = _dof(~shown & mask, 1)[:, None]", "c0 = 1.0"),
        ),
        AB,
        "the Hajek SE divides each arm's squares by n_a, not n_a - 1",
    ),
    Mutant(
        "aipw_hc1_one_parameter",
        EST,
        (
            ("k1 = _dof(a1, 2)[:, None]", "k1 = _dof(a1, 1)[:, None]"),
            ("k0 = _dof(a0, 2)[:, None]", "k0 = _dof(a0, 1)[:, None]"),
        ),
        AB,
        "AIPW's residual inflation counts one fitted parameter, not the line's two",
    ),
    Mutant(
        "horvitz_thompson_propensities_swapped",
        EST,
        (
            (
                "psi = ((shown & mask) / propensity - (~shown & mask) / (1.0 - propensity)) * y",
                "psi = ((shown & mask) / (1.0 - propensity) - (~shown & mask) / propensity) * y",
            ),
        ),
        AB,
        "HT weights each arm by the other arm's propensity",
    ),
    Mutant(
        "dim_se_withheld_arm_over_n1",
        EST,
        (
            (
                "_safe_div(p0 * (1 - p0), n0))",
                "_safe_div(p0 * (1 - p0), n1))",
            ),
        ),
        AB,
        "the withheld arm's variance is divided by the shown arm's size",
    ),
    Mutant(
        "newcombe_low_uses_the_wrong_side",
        EST,
        (
            (
                "low = tau - np.sqrt((p1 - l1) ** 2 + (u0 - p0) ** 2)",
                "low = tau - np.sqrt((p1 - l1) ** 2 + (p0 - l0) ** 2)",
            ),
        ),
        AB,
        "Newcombe's lower bound takes the withheld arm's lower half-width",
    ),
    Mutant(
        "withhold_top_inclusive",
        "procmem_core/explore.py",
        (("out = np.asarray(u) < explore_rate", "out = np.asarray(u) <= explore_rate"),),
        (T + "procmem_core/graph/test_pack.py",),
        "withhold when u <= epsilon",
        equivalent="u is a uniform double in [0, 1): it equals epsilon with probability "
        "2^-53 per draw, so no finite run can tell < from <=",
    ),
    # -- the learnings queue --
    Mutant(
        "review_policy_writers_strict",
        "procmem_core/learnings/policy.py",
        (
            (
                "tests.append(writers >= self.min_writers)",
                "tests.append(writers > self.min_writers)",
            ),
        ),
        LEARNINGS,
        "a candidate needs min_writers + 1 distinct writers",
    ),
    Mutant(
        "review_policy_and_or_swapped",
        "procmem_core/learnings/policy.py",
        (
            (
                'return all(tests) if self.combine == "and" else any(tests)',
                'return any(tests) if self.combine == "and" else all(tests)',
            ),
        ),
        LEARNINGS,
        "combine='and' admits when either threshold holds",
    ),
    Mutant(
        "supporter_writers_counts_rows",
        "procmem_core/learnings/candidate.py",
        (
            (
                "supporter_writers=len({r.writer for r in self.rows})",
                "supporter_writers=len([r.writer for r in self.rows])",
            ),
        ),
        LEARNINGS,
        "supporter_writers counts rows, so one writer looks like many",
    ),
    Mutant(
        "first_reach_new_user_off_by_one",
        "procmem_core/learnings/exact.py",
        (
            (
                "step = rate * np.clip(users - d, 0.0, None) / users",
                "step = rate * np.clip(users - d + 1, 0.0, None) / (users + 1)",
            ),
        ),
        (*LEARNINGS[:1], T + "simulators/test_sim_learnings.py"),
        "the chance that a supporter is new is (users - d + 1) / (users + 1)",
    ),
    # -- confidence sequences: their module arrives with ab14's merge (pending until then) --
    Mutant(
        "normal_mixture_bound_half_log_alpha",
        "procmem_core/ab/boundaries.py",
        (
            (
                "np.log1p(v / rho) + 2.0 * math.log(1.0 / alpha)",
                "np.log1p(v / rho) + math.log(1.0 / alpha)",
            ),
        ),
        SEQUENCES,
        "the normal mixture's boundary with log(1/alpha) for 2 log(1/alpha)",
        pending="ab14",
    ),
    Mutant(
        "best_rho_without_the_log_term",
        "procmem_core/ab/boundaries.py",
        (
            (
                "return v_opt / (2.0 * ell + math.log(1.0 + 2.0 * ell))",
                "return v_opt / (2.0 * ell)",
            ),
        ),
        SEQUENCES,
        "rho = v_opt / (2 log(1/alpha)) (12.60056 at v_opt 100, alpha 0.05, becomes 16.69)",
        pending="ab14",
    ),
    Mutant(
        "beta_mixture_failures_counted_as_trials",
        "procmem_core/ab/boundaries.py",
        (
            (
                "marginal - special.xlogy(k, p) - special.xlogy(n - k, 1.0 - p)",
                "marginal - special.xlogy(k, p) - special.xlogy(n, 1.0 - p)",
            ),
        ),
        SEQUENCES,
        "the Beta mixture's likelihood uses n failures instead of n - k",
        pending="ab14",
    ),
)


def copy_tree(dest: Path) -> Path:
    """The working tree (uncommitted edits included) without VCS, venvs and outputs."""

    def ignore(folder: str, names: list[str]) -> set[str]:
        rel = Path(folder).relative_to(ROOT)
        out = {n for n in names if n in SKIP or n.endswith(SKIP_SUFFIXES)}
        if rel == Path("reports"):
            out.add("out")
        return out | {n for n in names if n.startswith("mlflow.db")}

    shutil.copytree(ROOT, dest, ignore=ignore)
    return dest


def run_tests(tree: Path, tests: tuple[str, ...]) -> tuple[int, float, str]:
    """``(pytest exit code or -1 on the time limit, seconds, last lines of output)``."""
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    cmd = [sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", *tests]
    start = time.monotonic()
    try:
        done = subprocess.run(
            cmd, cwd=tree, env=env, capture_output=True, text=True, timeout=RUN_LIMIT
        )
    except subprocess.TimeoutExpired:
        return -1, time.monotonic() - start, "time limit"
    tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-3:])
    return done.returncode, time.monotonic() - start, tail


def check_targets(mutant: Mutant, tree: Path) -> str | None:
    """None when every edit applies exactly once; else why not."""
    path = tree / mutant.file
    if not path.exists():
        return f"{mutant.file} does not exist"
    text = path.read_text()
    for old, _ in mutant.edits:
        if text.count(old) != 1:
            return f"{old!r} occurs {text.count(old)} times in {mutant.file}"
    missing = [t for t in mutant.tests if not (tree / t).exists()]
    return f"missing test files {missing}" if missing else None


def run_mutant(mutant: Mutant, tree: Path) -> dict:
    path = tree / mutant.file
    original = path.read_text()
    text = original
    for old, new in mutant.edits:
        text = text.replace(old, new)
    path.write_text(text)
    try:
        code, seconds, tail = run_tests(tree, mutant.tests)
    finally:
        path.write_text(original)
    status = {0: "survived", 1: "killed", -1: "killed"}.get(code, "error")
    return {"name": mutant.name, "status": status, "exit": code, "seconds": round(seconds, 1),
            "detail": tail.splitlines()[-1] if tail else ""}  # fmt: skip


def classify(mutants: tuple[Mutant, ...], tree: Path) -> tuple[list, list, list, list]:
    """``(to run, equivalent, pending, errors)``."""
    runnable, equivalent, pending, errors = [], [], [], []
    for m in mutants:
        if m.equivalent:
            equivalent.append({"name": m.name, "reason": m.equivalent})
            continue
        if m.pending and not (tree / m.file).exists():
            pending.append({"name": m.name, "branch": m.pending, "file": m.file})
            continue
        problem = check_targets(m, tree)
        if problem:
            errors.append({"name": m.name, "status": "error", "detail": problem})
        else:
            runnable.append(m)
    return runnable, equivalent, pending, errors


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="", help="comma-separated mutant names")
    parser.add_argument("--jobs", type=int, default=1, help="mutants run side by side")
    parser.add_argument("--list", action="store_true", help="list the mutants and stop")
    args = parser.parse_args(argv)
    chosen = MUTANTS
    if args.only:
        names = set(args.only.split(","))
        unknown = names - {m.name for m in MUTANTS}
        if unknown:
            parser.error(f"unknown mutants: {sorted(unknown)}")
        chosen = tuple(m for m in MUTANTS if m.name in names)
    if args.list:
        for m in chosen:
            tag = (
                " (equivalent)" if m.equivalent else f" (pending {m.pending})" if m.pending else ""
            )
            print(f"{m.name}{tag}: {m.bug} [{m.file}]")
        return 0
    with tempfile.TemporaryDirectory(prefix="procmem-mutants-") as tmp:
        trees = [copy_tree(Path(tmp) / f"tree{i}") for i in range(max(1, args.jobs))]
        runnable, equivalent, pending, errors = classify(chosen, trees[0])
        files = tuple(dict.fromkeys(t for m in runnable for t in m.tests))
        code, seconds, tail = run_tests(trees[0], files)
        if code != 0:
            print(f"baseline: the unmutated tests fail (exit {code}):\n{tail}")
            print(json.dumps({"baseline": "failed", "exit": code}))
            return 2
        print(f"baseline: {len(files)} test files pass unmutated ({seconds:.0f} s)")
        results = run_all(runnable, trees)
    results += errors
    for r in results:
        print(f"{r['status']:9s} {r['name']}  {r.get('seconds', '')}  {r['detail']}")
    for e in equivalent:
        print(f"equivalent {e['name']}: {e['reason']}")
    for p in pending:
        print(f"pending   {p['name']}: {p['file']} arrives with {p['branch']}")
    survived = [r["name"] for r in results if r["status"] == "survived"]
    failed = [r["name"] for r in results if r["status"] == "error"]
    summary = {
        "mutants": len(results),
        "killed": sum(r["status"] == "killed" for r in results),
        "survived": survived,
        "errors": failed,
        "equivalent": [e["name"] for e in equivalent],
        "pending": [p["name"] for p in pending],
        "status": {r["name"]: r["status"] for r in results},
    }
    print(json.dumps(summary))
    return 1 if survived or failed else 0


def run_all(runnable: list[Mutant], trees: list[Path]) -> list[dict]:
    """Each tree runs its share of the mutants in turn (one mutant per tree at a time)."""
    shares = [runnable[i :: len(trees)] for i in range(len(trees))]

    def work(i: int) -> list[dict]:
        out = []
        for m in shares[i]:
            out.append(run_mutant(m, trees[i]))
            print(f"  {out[-1]['status']:9s} {m.name} ({out[-1]['seconds']} s)", flush=True)
        return out

    with ThreadPoolExecutor(len(trees)) as pool:
        parts = list(pool.map(work, range(len(trees))))
    order = {m.name: i for i, m in enumerate(runnable)}
    return sorted((r for p in parts for r in p), key=lambda r: order[r["name"]])


if __name__ == "__main__":
    sys.exit(main())
