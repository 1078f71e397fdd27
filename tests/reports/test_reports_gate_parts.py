"""Parts of the gate section on their own inputs, without a sweep: the fixed sample size
against brute force, categorical factors never joined, the design frontier, an
infeasible recommendations.json, the guarantee against ledger size and share, and
coinciding or equal curves drawn apart (split from ``test_reports_gate.py``)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from matplotlib.lines import Line2D
from scipy import stats

from procmem_core.gates import make_gate
from reports.sections.gate_explain import fixed_sample_size
from reports.sections.gate_figures import factor_figure


def test_fixed_sample_size_against_brute_force():
    def brute(p0, p1, a, b):
        for n in range(1, 400):
            for c in range(n + 1):
                if stats.binom.cdf(c, n, p0) <= a and stats.binom.cdf(c, n, p1) >= 1 - b:
                    return n
        return None

    for p0 in (0.6, 0.8, 0.9):
        assert fixed_sample_size(p0, 0.15, 0.05, 0.2) == brute(p0, p0 - 0.15, 0.05, 0.2)


def test_categorical_factor_levels_are_never_joined():
    table = pd.DataFrame(
        {
            "config": ["a", "a"],
            "scenario.ledger_size": [None, 20],
            "false_revert_rate": [0.09, 0.14],
            "false_revert_rate_se": [0.001, 0.001],
            "missed_regression_rate": [0.2, 0.36],
            "missed_regression_rate_se": [0.001, 0.001],
        }
    )
    fig = factor_figure(table, "scenario.ledger_size", {"a": (0, 0, 0, 1)}, "ledger", "p0 known")
    for ax in fig.axes:
        joined = [ln for ln in ax.get_lines() if isinstance(ln, Line2D) and len(ln.get_xdata()) > 1
                  and ln.get_linestyle() not in ("None", "none", " ", "")]  # fmt: skip
        assert not joined


def test_the_prescription_shows_its_design_frontier():
    """A prescribed two-sample gate stops early when nothing changed: the sentence says so and
    the section shows its frontier (caps against expected pairs) with the Wald-Wolfowitz
    bound; recommendations.json holds the frontier."""
    from procmem_core.gates import DesignQuestion, design_gate
    from reports.sections.gate import _frontier_block
    from reports.sections.gate_design import Prescription

    q = DesignQuestion(alpha=0.1, beta=0.3, min_drop=0.3, ledger=10, concurrent=0.5,
                       p0_low=0.4, p0_high=0.9, max_runs=40)  # fmt: skip
    design = design_gate(q)
    chosen = next(a for a in design.answers if (a.family, a.design) == ("two_sample", "concurrent"))
    p = Prescription(q, design, chosen, pd.DataFrame())
    assert "stops early when nothing changed" in p.sentence()
    (fig,) = _frontier_block(p)
    assert fig.name == "gate_frontier" and fig.png.startswith(b"\x89PNG")
    assert f"within {chosen.bound.ratio:.3f} of it" in fig.caption
    rec = json.loads(p.recommendations())
    got = next(a for a in rec["answers"] if a["config"] == rec["gate"])
    caps = [x["max_runs"] for x in got["frontier"]]
    assert caps == sorted(caps) and caps[-1] == 40 and chosen.max_runs in caps
    assert got["bound"]["bound"] < got["bound"]["runs"]


def test_an_infeasible_recommendations_file_says_what_to_do_instead():
    """No gate can meet these targets within 10 runs: the file has no ``gate`` (which
    ``make_gate(**rec["gate"])`` could not build), says what to do, and names the
    closest gate, which ``make_gate`` builds."""
    from procmem_core.gates.design import DesignQuestion, design_gate
    from reports.sections.gate_design import Prescription

    q = DesignQuestion(
        alpha=0.01, beta=0.01, min_drop=0.05, ledger=20, concurrent=0.0,
        p0_low=0.3, p0_high=0.95, max_runs=10,
    )  # fmt: skip
    design = design_gate(q)
    assert not design.feasible
    rec = json.loads(Prescription(q, design, None, pd.DataFrame()).recommendations())
    assert rec["feasible"] is False and "gate" not in rec
    assert rec["instead"].startswith("no gate meets the targets within 10 runs; to get one: ")
    closest = make_gate(**rec["closest_gate"])
    best = max(design.answers, key=lambda a: (a.false_revert <= q.alpha, a.power))
    assert closest.config() == make_gate(**best.config).config()
    assert rec["sentence"].startswith("No gate meets false revert <= 0.01")


def test_an_infeasible_question_says_what_it_would_take_in_remedies():
    """gate_tuning's question at 60 runs (no concurrent control): the SPRT misses alpha
    (its note is a reason, not a remedy) and two fixed-ledger families share one remedy,
    said once; the closest gate is a concurrent one, which the question's runs lack."""
    from procmem_core.gates.design import DesignQuestion, design_gate
    from reports.sections.gate_design import Prescription

    q = DesignQuestion(alpha=0.05, beta=0.2, min_drop=0.125, ledger=20, concurrent=0.0,
                       p0_low=0.3, p0_high=0.95, max_runs=60)  # fmt: skip
    design = design_gate(q)
    said = Prescription(q, design, None, pd.DataFrame()).sentence()
    takes = said.split("To meet them: ")[1]
    sprt = next(a for a in design.answers if a.family == "sprt")
    assert sprt.false_revert > q.alpha and sprt.note not in takes
    ledger = "so it needs a ledger of at least 99 runs or concurrent control"
    assert takes.count(ledger) == 1  # calibrated SPRT and fixed two-sample share it
    assert "concurrent design" in takes and "a larger max_runs is needed" in takes
    assert "The closest is the exact two-sample test, concurrent design" in said
    assert "(it needs concurrent control, which this question's runs did not have)" in said


def test_what_it_would_take_names_the_concurrent_gate_the_objective_prefers():
    """Without concurrent control and no fixed-ledger gate feasible, the remedy is the
    concurrent family the objective picks (fewest sessions when nothing changed), not the
    one with the smallest cap: this question's discordant SPRT meets both at 90 pairs for
    116.9 sessions, the two-sample test at 93 pairs for 54.2 (it said the discordant one)."""
    from procmem_core.gates.design import DesignQuestion, FamilyAnswer, GateDesign
    from reports.sections.gate_design import Prescription

    q = DesignQuestion(alpha=0.1, beta=0.2, min_drop=0.2, ledger=30, concurrent=0.0,
                       p0_low=0.25, p0_high=0.75, max_runs=100)  # fmt: skip
    two = {"name": "two_sample", "min_drop": 0.2, "alpha": 0.1, "max_runs": 93, "ledger": 30,
           "p0_low": 0.25, "p0_high": 0.75, "accept_level": -1.5, "final_level": 0.7,
           "accept_shrink": 4.0}  # fmt: skip
    pairs = {"name": "discordant_sprt", "min_drop": 0.2, "alpha": 0.1, "max_runs": 90}
    fixed = {**two, "design": "fixed", "max_runs": 100, "accept_level": -60.0}
    answers = (
        FamilyAnswer("two_sample", "fixed", False, 100, fixed, 0.0999, 0.714, (95.2, 0.0),
                     (56.8, 0.0), "best power 0.714 at 100 runs; a larger max_runs is needed"),
        FamilyAnswer("two_sample", "concurrent", True, 93, two, 0.1, 0.801, (27.1, 27.1),
                     (29.9, 29.9)),
        FamilyAnswer("discordant_sprt", "concurrent", True, 90, pairs, 0.0782, 0.8,
                     (58.4, 58.4), (45.4, 45.4)),
    )  # fmt: skip
    design = GateDesign(q, answers)
    assert design.chosen is None
    takes = Prescription(q, design, None, pd.DataFrame()).sentence().split("To meet them: ")[1]
    assert takes.startswith("with concurrent control the exact two-sample test, concurrent")
    assert "meets both at 93 pairs (a decision costs 54.2 sessions when nothing changed" in takes
    assert "discordant" not in takes


def test_the_prescription_shows_its_guarantee_against_ledger_size_and_share():
    """The prescribed two-sample gate recalibrates per ledger size: the section's table holds
    its exact worst cases per size (each <= alpha) beside the levels-kept figures, the
    sentence says which design holds the guarantee, and the share table's error rate is the
    same at every share while the sessions move with it (exact)."""
    from experiments.answers.gate import profile
    from procmem_core.gates import DesignQuestion, LedgerRow, design_gate, ledger_profile
    from reports.sections.gate_design import Prescription

    q = DesignQuestion(alpha=0.1, beta=0.3, min_drop=0.3, ledger=10, concurrent=0.5,
                       p0_low=0.4, p0_high=0.9, max_runs=40, ledger_sizes=(0, 10, 40))  # fmt: skip
    design = design_gate(q)
    chosen = next(a for a in design.answers if (a.family, a.design) == ("two_sample", "concurrent"))
    p = Prescription(q, design, chosen, pd.DataFrame(),
                     tuple(LedgerRow(**r) for r in profile(chosen, q)))  # fmt: skip
    rows = ledger_profile(make_gate(**chosen.config), (0, 10, 40))
    assert p.profile == rows
    table = p.ledger_table()
    assert list(table.frame["ledger (runs)"]) == [0, 10, 40]
    fr = table.frame["false revert, recalibrated (worst, bound)"]
    assert list(fr) == [round(r.false_revert, 4) for r in rows] and (fr <= 0.1).all()
    assert list(table.frame["false revert, 10-run levels kept (worst, bound)"]) == [
        round(r.false_revert_kept, 4) for r in rows
    ]
    assert "recalibrates its revert and final levels for the ledger it sees" in table.caption
    sentence = p.sentence()
    assert "recalibrates its revert and final levels for the ledger a revision has" in sentence
    worst, kept = max(r.false_revert for r in rows), max(r.false_revert_kept for r in rows)
    assert f"exact worst case <= {worst:.4f} at ledgers 0, 10, 40" in sentence
    assert f"levels kept would reach {kept:.4f}" in sentence
    weakest = min(rows, key=lambda r: r.power)
    assert f"least at ledger {weakest.ledger} ({weakest.power:.3f})" in sentence
    shares = p.share_table().frame
    assert list(shares["concurrent share"]) == [0.25, 0.5, 0.75]
    assert shares["false revert (worst, bound)"].nunique() == 1
    null = shares["sessions when nothing changed (worst p0)"]
    # both arms must reach the pairs: the total is symmetric in q <-> 1 - q, least at 1/2
    assert null[0] == pytest.approx(null[2], abs=0.11) and null[1] < null[0]
    rec = json.loads(p.recommendations())
    assert [r["ledger"] for r in rec["ledger_profile"]] == [0, 10, 40]


def _two_curves(same: bool) -> pd.DataFrame:
    p0 = np.linspace(0.1, 0.9, 30)
    y = 0.2 * np.sin(np.pi * p0)
    other = y + (0.001 if same else 0.05)
    return pd.concat(
        [
            pd.DataFrame({"config": "SPRT, min runs 3", "ledger": 20, "p0": p0, "p_revert": y}),
            pd.DataFrame({"config": "SPRT, min runs 5", "ledger": 20, "p0": p0, "p_revert": other}),
        ]
    )


def test_coinciding_curves_are_drawn_distinguishably_and_said_to_coincide():
    """Issue 30 item 9: SPRT min runs 3 was drawn exactly under min runs 5. Curves within
    0.005 everywhere are detected from the data, the later one drawn dashed with markers, and
    the caption note names them; curves apart are neither restyled nor said to coincide."""
    from reports.claims import coincide_note
    from reports.sections.gate_figures import curve_groups, worst_case_figure

    colours = {"SPRT, min runs 3": (0, 0, 1, 1), "SPRT, min runs 5": (1, 0, 0, 1)}
    together = _two_curves(same=True)
    groups = curve_groups(together, "p0", "p_revert")
    assert groups == [("SPRT, min runs 3", "SPRT, min runs 5")]
    fig = worst_case_figure(together, colours, 0.05)
    lines = {ln.get_label(): ln for ln in fig.axes[0].get_lines()}
    first = next(v for k, v in lines.items() if k.startswith("SPRT, min runs 3"))
    second = next(v for k, v in lines.items() if k.startswith("SPRT, min runs 5"))
    assert first.get_linestyle() == "-" and first.get_marker() in ("None", "none", "")
    assert second.get_linestyle() == "--" and second.get_marker() == "x"
    note = coincide_note(groups)
    assert "The curves of SPRT, min runs 3 and SPRT, min runs 5 coincide" in note
    apart = _two_curves(same=False)
    assert curve_groups(apart, "p0", "p_revert") == [] and coincide_note([]) == ""
    fig = worst_case_figure(apart, colours, 0.05)
    styles = {ln.get_linestyle() for ln in fig.axes[0].get_lines() if ln.get_label()[:4] == "SPRT"}
    assert styles == {"-"}


def test_equal_points_are_set_apart_in_factor_and_tradeoff_figures():
    """Two configurations with the same error rates at one ledger size: the factor figure
    sets them side by side, the trade-off figure gives the later its own marker and the
    caption's note names them."""
    from reports.sections.gate_figures import tradeoff_figure, tradeoff_groups

    table = pd.DataFrame(
        {
            "config": ["a", "b"],
            "scenario.ledger_size": [20, 20],
            "false_revert_rate": [0.137, 0.138],
            "false_revert_rate_se": [0.001, 0.001],
            "missed_regression_rate": [0.362, 0.362],
            "missed_regression_rate_se": [0.001, 0.001],
            "frontier": [True, False],
        }
    )
    colours = {"a": (0, 0, 1, 1), "b": (1, 0, 0, 1)}
    fig = factor_figure(table, "scenario.ledger_size", colours, "ledger", "p0 known")
    xs = sorted(float(c.lines[0].get_xdata()[0]) for c in fig.axes[0].containers)
    assert len(xs) == 2 and xs[1] - xs[0] == pytest.approx(0.15)
    assert tradeoff_groups(table) == [("a", "b")]
    fig = tradeoff_figure(table, colours, (0.05, 0.2), ("a", "b"))
    markers = [c.lines[0].get_marker() for c in fig.axes[0].containers]
    assert sorted(markers) == ["o", "x"]


def test_the_gate_opens_in_two_short_sentences_and_keeps_every_number_after():
    """Issue 30: what to use, then its guarantee and cost, each at most about 50 words; the
    exact worst cases, the per-arm sessions, the calendar time and the ledger's remark
    follow in the paragraph after, so no number of the old single sentence is lost."""
    from procmem_core.gates import DesignQuestion, LedgerRow, design_gate
    from reports.document import Section
    from reports.length import sentences
    from reports.sections.gate_design import Prescription

    q = DesignQuestion(alpha=0.1, beta=0.3, min_drop=0.3, ledger=10, concurrent=0.5,
                       p0_low=0.4, p0_high=0.9, max_runs=40, ledger_sizes=(0, 10, 40))  # fmt: skip
    design = design_gate(q)
    a = next(x for x in design.answers if (x.family, x.design) == ("two_sample", "concurrent"))
    from experiments.answers.gate import profile

    p = Prescription(q, design, a, pd.DataFrame(), tuple(LedgerRow(**r) for r in profile(a, q)),
                     sessions_per_day=8.0)  # fmt: skip
    s = Section("gates", "Gates", p.sentence(), [])
    use, cost = sentences(s.answer)
    assert use.startswith("Use the exact two-sample test") and len(use.split()) <= 50
    assert cost.startswith("At every prior rate p0 in [0.4, 0.9]") and len(cost.split()) <= 50
    assert f"max_runs {a.max_runs}" in use and f"{a.config['accept_level']:.3f}" in use
    assert f"{sum(a.runs_null):.1f} sessions when nothing changed" in cost
    assert f"{sum(a.runs_alt):.1f} at that drop" in cost
    numbers = [f"false revert <= {a.false_revert:.4f}", f"power >= {a.power:.3f}",
               f"{a.runs_null[0]:.1f} sessions on the revision + {a.runs_null[1]:.1f} on the prior",
               f"{a.runs_alt[0]:.1f} + {a.runs_alt[1]:.1f} at the drop",
               f"(together {sum(a.runs_null) / 8:.3g} and {sum(a.runs_alt) / 8:.3g} days at 8",
               "Exact worst cases with a 10-run ledger and concurrent share 0.5",
               "recalibrates its revert and final levels"]  # fmt: skip
    assert [n for n in numbers if n not in s.more] == []
    assert s.said == p.sentence()


def test_gate_labels_carry_the_settings_that_tell_them_apart():
    """Issue 30 item 10: the prescribed gate's legend label, the frontier's caption and the
    infeasible answer's closest gate and notes name the gate with its settings (not the
    bare family key ``two_sample``) and the conditions of their worst cases."""
    from procmem_core.gates import DesignQuestion, design_gate
    from reports.sections.gate import _frontier_block, prescribed_label
    from reports.sections.gate_design import Prescription

    q = DesignQuestion(alpha=0.1, beta=0.3, min_drop=0.3, ledger=10, concurrent=0.5,
                       p0_low=0.4, p0_high=0.9, max_runs=40)  # fmt: skip
    design = design_gate(q)
    a = next(x for x in design.answers if (x.family, x.design) == ("two_sample", "concurrent"))
    p = Prescription(q, design, a, pd.DataFrame())
    assert prescribed_label(p) == (
        f"prescribed: exact two-sample test, concurrent design, ledger 10, alpha 0.1, beta 0.3, "
        f"min runs {a.config['min_runs']}, max_runs {a.max_runs}, accept level "
        f"{a.config['accept_level']:.3f}"
    )
    (fig,) = _frontier_block(p)
    assert fig.caption.startswith("The design frontier of the prescribed gate's family: ")
    none = Prescription(q, design, None, pd.DataFrame())
    (fig,) = _frontier_block(none)  # the first feasible family's, named with its settings
    assert fig.caption.startswith(
        "The design frontier of the exact two-sample test, concurrent design, ledger 10, "
        "alpha 0.1, beta 0.3, min runs"
    )
    assert prescribed_label(none) == "prescribed"
    hard = DesignQuestion(alpha=0.01, beta=0.01, min_drop=0.05, ledger=20, concurrent=0.0,
                          p0_low=0.3, p0_high=0.95, max_runs=10)  # fmt: skip
    said = Prescription(hard, design_gate(hard), None, pd.DataFrame()).sentence()
    assert "two_sample" not in said and "The closest is the " in said
    assert "(exact, worst over p0 in [0.3, 0.95]): best power" in said
