"""``Metric`` (issue 24, item 1): z, within, the one fmt, the flat form read back, and the
HTML views of the engine's records."""

from __future__ import annotations

import html
import math

import numpy as np
import pytest

from procmem_core import Metric, ParameterError, SPRTGate, flat_fate, metrics_of
from procmem_core.gates.design import DesignQuestion, FamilyAnswer, GateDesign
from procmem_core.metric import fmt


def test_z_is_the_distance_in_standard_errors():
    m = Metric(0.13, 0.004, 0.12)
    assert m.z == pytest.approx(2.5)
    assert m.within(4) and not m.within(2)
    assert Metric(0.11, 0.004, 0.12).z == pytest.approx(-2.5)


def test_no_se_or_no_exact_has_no_z_and_within_names_what_is_missing():
    assert Metric(0.5).z is None and Metric(0.5, 0.01).z is None
    assert Metric(0.5, None, 0.5).z is None
    with pytest.raises(ParameterError, match="exact"):
        Metric(0.5, 0.01).within(4)
    with pytest.raises(ParameterError, match="se"):
        Metric(0.5, None, 0.5).within(4)


def test_a_figure_with_se_0_agrees_only_up_to_rounding():
    """Every replication decided alike: no noise to divide by (as the report's agreement)."""
    assert Metric(40.0, 0.0, 40.0 * (1 + 1e-12)).z == 0.0
    assert Metric(40.0, 0.0, 39.9).z == math.inf
    assert Metric(39.9, 0.0, 40.0).z == -math.inf
    assert not Metric(39.9, 0.0, 40.0).within(4)


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [({"value": "0.5"}, "value"), ({"value": 0.5, "se": -0.1}, "se"),
     ({"value": 0.5, "exact": "x"}, "exact"), ({"value": 0.5, "n": 0}, "n")],
)  # fmt: skip
def test_bad_fields_are_named(kwargs, field):
    with pytest.raises(ParameterError) as err:
        Metric(**kwargs)
    assert err.value.field == field


def test_fmt_value_se_and_the_exact_bound_at_0_and_1():
    assert Metric(0.12345, 0.00412).fmt() == "0.123 ± 0.0041"
    assert str(Metric(0.12345)) == "0.123"
    assert fmt(float("nan")) == "n/a" and fmt(0.5, float("nan")) == "0.5"
    # all 20 of 20: the exact one-sided 95 % Clopper-Pearson bound 0.05^(1/20)
    assert Metric(1.0, 0.0, n=20).fmt() == f"1 (all 20; > {0.05 ** (1 / 20):.3g} at 95 %)"
    assert Metric(0.0, 0.0, n=20).fmt() == f"0 (none of 20; < {1 - 0.05 ** (1 / 20):.3g} at 95 %)"
    assert Metric(0.0, 0.0).fmt() == "0 (the same in every replication)"  # never "0 ± 0"


def test_the_report_and_the_console_share_the_one_fmt():
    from experiments.summary import headline
    from reports.evidence import fmt as report_fmt

    assert report_fmt is fmt
    flat = {"p_excluded": 0.7403, "p_excluded_se": 0.00044, "p_excluded_exact": 0.7398}
    assert headline("fate", flat) == "p_excluded=0.74 ± 0.00044"


def test_the_flat_form_reads_back_as_records():
    flat = {"a": 0.3, "a_se": 0.01, "a_exact": 0.31, "b": 2.0, "c_se": 5.0}
    got = metrics_of(flat)
    assert got == {"a": Metric(0.3, 0.01, 0.31), "b": Metric(2.0), "c_se": Metric(5.0)}
    with pytest.raises(ParameterError, match="one of"):
        Metric.from_flat(flat, "d")


def test_records_show_themselves_as_tables():
    fate = flat_fate(0.7, 20)
    page = fate._repr_html_()
    # the exact fate at p = 0.7 (0.7658 in the seed's float arithmetic)
    assert f"<th>p_excluded</th><td>{fate.p_excluded:.4g}</td>" in page
    assert round(fate.p_excluded, 4) == 0.7658
    assert page.count("<tr><td>") == 20  # excluded_by_session, one row per session
    point = SPRTGate().operating_point(np.array([0.6, 0.8]), 0.8)
    page = point._repr_html_()
    assert f"<td>{float(point.p_revert[0]):.4g}</td>" in page
    assert "<th>p_revert</th>" in page
    curve = SPRTGate().operating_curve(np.array([0.7, 0.8, 0.9]), 0.1)
    assert curve._repr_html_().count("<tr><td>") == 3
    answer = FamilyAnswer("sprt", "fixed", True, 120, {"name": "sprt"}, 0.048, 0.81,
                          (40.5, 0.0), (35.25, 0.0))  # fmt: skip
    page = GateDesign(DesignQuestion(max_runs=120), (answer, answer))._repr_html_()
    assert "<th>max_runs</th><td>120</td>" in page  # the question
    assert page.count("<tr><td>sprt</td><td>fixed</td><td>True</td><td>120</td>") == 2
    assert "<td>0.048</td><td>0.81</td><td>(40.5, 0.0)</td>" in page


def test_the_rule_design_shows_its_pick_and_frontier():
    from procmem_core import ConfidenceRule
    from procmem_core.flat.design import DesignedRule, RuleDesign, RuleTargets

    pick = DesignedRule(ConfidenceRule(), 0.55, 0.91, 0.88, 6.5)
    other = DesignedRule(ConfidenceRule(), 0.6, 0.85, 0.93, 5.25)
    page = RuleDesign("confidence", RuleTargets(), False, pick, (other,), 12, 0, pick)._repr_html_()
    assert "<th>feasible</th><td>False</td>" in page
    for rule, cells in ((pick, "0.91 0.88 6.5"), (other, "0.85 0.93 5.25")):
        row = "".join(f"<td>{c}</td>" for c in (html.escape(rule.describe()), *cells.split()))
        assert row in page


def test_n_is_any_integer_but_a_bool():
    """A count from numpy (``np.int64``) is an integer; ``True`` is not a count."""
    assert Metric(1.0, 0.0, n=np.int64(20)).fmt() == Metric(1.0, 0.0, n=20).fmt()
    with pytest.raises(ParameterError) as err:
        Metric(1.0, 0.0, n=True)
    assert err.value.field == "n"


@pytest.mark.parametrize(
    ("metric", "field"),
    [(Metric(float("nan"), 0.1, 0.5), "value"), (Metric(0.5, float("nan"), 0.5), "se"),
     (Metric(0.5, 0.1, float("nan")), "exact")],
)  # fmt: skip
def test_within_cannot_judge_a_nan_and_says_which_field(metric, field):
    """A NaN SE (fewer than two replications) is no evidence of disagreement."""
    assert math.isnan(metric.z)
    with pytest.raises(ParameterError) as err:
        metric.within(4)
    assert err.value.field == field


def test_within_refuses_a_nan_k_and_equal_infinities_agree():
    with pytest.raises(ParameterError) as err:
        Metric(0.5, 0.1, 0.5).within(float("nan"))
    assert err.value.field == "k"
    assert Metric(math.inf, 0.0, math.inf).z == 0.0 and Metric(-math.inf, 0.0, math.inf).z < 0


def test_z_divides_by_the_paired_se_when_the_exact_shares_the_draws():
    """``x_exact`` computed from each replication's own draws (the loop's lift): ``z`` is over
    ``x_diff_se``, as the report's agreement table reads it; ``se`` stays the value's."""
    flat = {"lift": 0.12, "lift_se": 0.02, "lift_exact": 0.1, "lift_diff_se": 0.004}
    m = Metric.from_flat(flat, "lift")
    assert (m.se, m.diff_se, m.z) == (0.02, 0.004, pytest.approx(5.0))
    assert not m.within(4)
    assert Metric.from_flat({**flat, "lift_diff_se": float("nan")}, "lift").z == pytest.approx(1.0)
    with pytest.raises(ParameterError) as err:
        Metric(0.1, 0.01, 0.1, diff_se=-1.0)
    assert err.value.field == "diff_se"


def test_se_0_with_a_nan_is_nan_not_infinitely_far():
    assert math.isnan(Metric(float("nan"), 0.0, 0.5).z)
    assert math.isnan(Metric(0.5, 0.0, float("nan")).z)
