"""``python -m experiments.design rule``: the printed answer, bad input, the designed
rule in the config tree, and the recommended rules run in the confidence scenario."""

from __future__ import annotations

import re

import pytest

from experiments.build import validate
from experiments.design.__main__ import main
from procmem_core.flat.design import RuleTargets, design_rule
from simulators.scenarios.confidence import ConfidenceScenario
from simulators.users import UserPopulation

# The confidence family's design runs over the doubles the seed's float arithmetic
# reaches (docs/flat.md, "Float or grid"): tens of seconds of CPU, remembered per
# targets within a process, so a generous limit on a loaded machine.
pytestmark = pytest.mark.timeout(1800)

AT_60 = RuleTargets(0.10, -0.10, 0.6, 0.9, 0.9, 60)


@pytest.fixture(scope="module")
def designs():
    return {f: design_rule(AT_60, f) for f in ("confidence", "baseline", "posterior")}


@pytest.mark.slow
def test_issue_example_says_none_exists_what_is_closest_and_from_when(capsys):
    argv = "rule --helpful-lift 0.10 --harmful-lift -0.10 --base 0.6 --keep 0.9 --exclude 0.9"
    argv = [*argv.split(), "--within", "30", "--family", "confidence"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    d = design_rule(RuleTargets(within=30), "confidence")
    assert "none meets both within 30 sessions; closest: " + d.pick.describe() in out
    keep_short, excl_short = d.pick.shortfall(d.targets)
    assert f"keeps {d.pick.kept:.3f} (short of 0.9 by {keep_short:.3f})" in out
    assert f"excludes {d.pick.excluded:.3f} (short of 0.9 by {excl_short:.3f})" in out
    n, rule = d.shortest
    assert f"shortest horizon at which one meets both: {n} sessions: {rule.describe()}" in out
    frontier = re.findall(r"^\s+(\d\.\d{3})\s+(\d\.\d{3})\s+(\d+\.\d)\s+confidence", out, re.M)
    assert 2 <= len(frontier) <= 9
    kept = [float(k) for k, _, _ in frontier]
    assert kept == sorted(kept, reverse=True)
    # the seed's float arithmetic (the decimal grid keeps 0.198)
    assert "The seed's rule (confidence +0.08/-0.15 from 0.6, threshold 0.55): keeps 0.170" in out


@pytest.mark.parametrize(
    ("argv", "field"),
    [
        (["--keep", "1.0"], "keep"),
        (["--exclude", "0"], "exclude"),
        (["--within", "0"], "within"),
        (["--base", "1.5"], "base"),
        (["--harmful-lift", "0.2"], "harmful_lift"),
        (["--family", "nope"], "family"),
        (["--objective", "fast"], "objective"),
        (["--frontier", "-1"], "frontier"),
    ],
)
def test_bad_input_is_one_line_naming_the_field_and_exit_2(argv, field, capsys):
    assert main(["rule", *argv]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""  # before any work: nothing printed
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and f"{field}=" in lines[0]


@pytest.mark.slow
def test_designed_rule_in_the_config_tree_is_the_tools_pick(compose_preset, designs):
    sc = validate(compose_preset("confidence_sweep", ["case=confidence_single", "rule=designed"]))
    pick = designs["confidence"].pick
    assert sc.rule == pick.rule and sc.threshold == pytest.approx(pick.threshold)
    assert sc.sessions == AT_60.within and sc.exact_regime
    pop = sc.population
    assert (pop.base_rate, pop.helpful_effect, -pop.harmful_effect) == (0.6, 0.1, -0.1)


@pytest.mark.parametrize("family", ["confidence", "baseline", "posterior"])
def test_recommended_rule_meets_its_targets_in_the_confidence_scenario(family, designs):
    pick = designs[family].pick
    pop = UserPopulation(helpful_share=0.5, harmful_share=0.5, helpful_effect=0.1,
                         harmful_effect=0.1)  # fmt: skip
    sc = ConfidenceScenario(population=pop, rule=pick.rule, threshold=pick.threshold,
                            procedures=1, sessions=60, replications=20_000)  # fmt: skip
    m = sc.run(17).metrics
    for name, exact, target in (
        ("helpful_retained", pick.kept, AT_60.keep),
        ("harmful_excluded", pick.excluded, AT_60.exclude),
    ):
        sim, se = m[name], m[f"{name}_se"]
        assert m[f"{name}_exact"] == pytest.approx(exact, abs=1e-12)
        assert abs(sim - exact) <= 4 * se
        assert sim >= target - 4 * se
