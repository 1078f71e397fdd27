"""The mutants ``tools/mutants.py`` plants, one at a time: small, plausible bugs in the
engine's rules, each with the test files that must catch it.

Every ``old`` text must occur exactly once in its file. ``equivalent`` names a mutant that
cannot change behaviour (listed with the reason, never run or counted); ``pending`` names
the branch whose merge brings the file a mutant edits (the confidence sequences arrive
with ab14): it runs as soon as the file exists. To add a mutant, add a ``Mutant`` here.
"""

from __future__ import annotations

from dataclasses import dataclass


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
GATES = (
    T + "procmem_core/gates/test_gates.py",
    T + "procmem_core/gates/test_gates_reference.py",  # GATES[1]: the reference tests
    T + "procmem_core/gates/test_gate_batch.py",
)
OPS = (T + "procmem_core/gates/test_gate_operating_points.py",)
EVOLVE = (
    T + "procmem_core/graph/test_evolve.py",
    T + "procmem_core/graph/test_evolve_reference.py",
)
AB = (T + "procmem_core/ab/test_estimators_reference.py", T + "simulators/test_explore.py")
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
            ("np.minimum(moved, ceiling, out=moved)", "np.minimum(moved, 1.0, out=moved)"),
            ("np.maximum(moved, floor, out=moved)", "np.maximum(moved, 0.0, out=moved)"),
            (
                "self.settle(min(self.ceiling, max(self.floor, float(confidence) + step)))",
                "self.settle(min(1.0, max(0.0, float(confidence) + step)))",
            ),
        ),
        (
            *FLAT,
            T + "procmem_core/flat/test_flat_fate.py",
            T + "simulators/test_confidence.py",
            T + "simulators/test_explore.py",
            T + "experiments/tasks/test_seed_demo.py",
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
            T + "simulators/test_confidence.py",
            T + "simulators/test_explore.py",
        ),
        "every good session moves the confidence by 1.1 x reward",
    ),
    Mutant(
        "flat_threshold_strict",
        RULE,
        (
            (
                "np.asarray(confidence) >= threshold",
                "np.asarray(confidence) > threshold",
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
            T + "simulators/test_gate.py",
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
            T + "simulators/test_gate.py",
            *EVOLVE[:1],
            T + "procmem_core/graph/test_evolve_sequential.py",
            *GATES,
        ),
        "at the cap run the cap rule overrides a boundary crossed on that same run",
    ),
    Mutant(
        "sprt_boundary_tie_continues",
        LLR,
        (
            (
                "return llr >= ln_a - LLR_TOLERANCE, llr <= ln_b + LLR_TOLERANCE",
                "return llr >= ln_a, llr <= ln_b",
            ),
        ),
        GATES,
        "an LLR exactly on ln A in arithmetic, an ulp short in floats, does not revert",
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
        "procmem_core/gates/lattice_gate.py",
        (
            (
                "return k, np.asarray(self.estimate_p0(k, prior_runs), dtype=float)",
                "return k, k / max(prior_runs, 1)",
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
                "out = np.greater(revision_mean, limit + COST_TOLERANCE * np.abs(limit))",
                "out = np.greater_equal(revision_mean, limit - COST_TOLERANCE * np.abs(limit))",
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
            T + "simulators/test_loop.py",
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
        (("(s >= TEMPLATE_MIN_RATE * n)", "(s > TEMPLATE_MIN_RATE * n)"),),
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
        (("(streak >= max(strike_limit, 1))", "(streak > max(strike_limit, 1))"),),
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
        (*AB, T + "experiments/test_config.py"),
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
    # -- the report figures --
    Mutant(
        "figure_error_bars_one_se",
        "reports/canvas.py",
        (("yerr=1.96 * se.fillna(0)", "yerr=se.fillna(0)"),),
        (T + "reports/test_report_figures_content.py",),
        "the 95 % Monte Carlo bars are drawn at 1 SE",
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
        (*LEARNINGS[:1], T + "simulators/test_learnings.py"),
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
