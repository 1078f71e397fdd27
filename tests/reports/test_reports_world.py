"""The world a section simulated, stated (issue 30, "The world, stated"): each preset
section opens, right after its answer, with one table of the world's parameters (a value
when constant, the set or range when swept) and a sentence naming those its prescription
reads; on in-memory sweeps of real scenario runs."""

from __future__ import annotations

import pandas as pd
import pytest

from experiments.answers import sweep_answers
from procmem_core.gates import SPRTGate
from reports.document import Table
from reports.recommend import GateTargets
from reports.sections.fate import fate_section
from reports.sections.gate import gate_section
from reports.world import CAPTION, value_text, world_blocks, world_sentence
from simulators.scenarios.fate import ProcedureFateScenario
from simulators.scenarios.gate import GateScenario

PRIORS = (0.6, 0.7, 0.8, 0.85, 0.9)


def _world(section) -> tuple[pd.DataFrame, str]:
    table, sentence = section.blocks[:2]
    assert isinstance(table, Table) and table.caption == CAPTION
    assert isinstance(sentence, str)
    return table.frame.set_index("parameter"), sentence


@pytest.fixture(scope="module")
def gate_sweep(sweep_of):
    gate = SPRTGate()
    entries = []
    for p in PRIORS:
        scenario = dict(p_prior=p, ledger_size=20, heterogeneity=0.0, replications=400,
                        drops=(0.0, 0.15), name="gate")  # fmt: skip
        result = GateScenario(gate=gate, **{k: v for k, v in scenario.items() if k != "name"})
        entries.append(({"scenario": scenario, "gate": gate.config()}, result.run(5)))
    sweep = sweep_of(entries)
    sweep.answers = sweep_answers(sweep.runs, 0.1, 0.5)  # what the sweep computes at its end
    return sweep


@pytest.mark.slow
def test_the_gate_section_opens_with_its_world_and_what_the_design_reads(gate_sweep):
    section = gate_section(gate_sweep, GateTargets(0.1, 0.5))
    table, sentence = _world(section)
    # constant params show their value; the swept prior shows its range (5 values)
    assert table.at["p_prior", "value"] == "swept: 0.6 to 0.9 (5 values)"
    assert table.at["ledger_size", "value"] == "20"
    assert table.at["heterogeneity", "value"] == "0"
    assert table.at["replications", "value"] == "400"
    assert table.at["drops", "value"] == "(0.0, 0.15)"
    assert "name" not in table.index  # bookkeeping, not the world
    # the design question reads the prior range, the ledger and the gates' min_drop
    assert table.at["gate.min_drop", "value"] == "0.15"
    reads = table["prescription reads it"] == "yes"
    # the runs carry their whole world (as logged jobs do): concurrent_share is read too
    assert sorted(table.index[reads]) == ["concurrent_share", "gate.min_drop", "ledger_size",
                                          "p_prior"]  # fmt: skip
    assert sentence == (
        "The design question depends on p_prior (the p0 range [0.3, 0.95] covers it; swept: "
        "0.6 to 0.9 (5 values)), ledger_size (20), concurrent_share (0) and gate.min_drop "
        "(0.15); the others (cost_increase, cost_sd, design, drops, heterogeneity, pool_size, "
        "replications) change only the simulated evidence below, not it."
    )
    # no gate meets 0.1 / 0.5 here, so the sentence names the question, not a prescribed gate
    assert section.said.startswith("No gate meets")
    # the design question is the one the sentence names: a 20-run ledger, p0 up to 0.95
    assert "with a 20-run ledger" in section.said
    assert "at every prior rate p0 in [0.3, 0.95]" in section.said


@pytest.mark.slow
def test_runs_that_knew_p0_say_the_design_still_assumed_a_ledger(sweep_of):
    """Every run knew p0 (no ledger), but the design question is made at a 20-run ledger
    (``experiments.answers.gate.DEFAULT_LEDGER``): the old sentence read "ledger_size (p0
    known)" beside an answer "with a 20-run ledger"."""
    gate = SPRTGate()
    result = GateScenario(gate=gate, p_prior=0.8, replications=400).run(5)
    sweep = sweep_of([({"gate": gate.config()}, result)])
    sweep.answers = sweep_answers(sweep.runs, 0.1, 0.5)
    section = gate_section(sweep, GateTargets(0.1, 0.5))
    table, sentence = _world(section)
    assert "ledger_size" not in table.index  # no run had a ledger
    assert "with a 20-run ledger" in section.said  # the question the design answered
    said = "ledger_size (designed at a 20-run ledger, procmem's default, as every run knew p0; "
    assert said + "p0 known)" in sentence


def test_the_sentence_says_how_a_swept_read_is_used():
    """The design question is made at the smallest swept ledger and the largest concurrent
    share (``experiments.answers.gate.question_of``): the sentence says so beside the values;
    an unswept read keeps its bare value."""
    runs = pd.DataFrame(
        {
            "params.scenario.ledger_size": [20, 50, 20, 50],
            "params.scenario.concurrent_share": [0.25, 0.25, 0.5, 0.5],
            "params.gate.min_drop": [0.15] * 4,
        }
    )
    how = {
        "scenario.ledger_size": "designed at the smallest, 20; ",
        "scenario.concurrent_share": "designed at the largest, 0.5; ",
    }
    reads = ["scenario.ledger_size", "scenario.concurrent_share", "gate.min_drop"]
    said = world_sentence(runs, reads, "The prescribed gate", how=how)
    assert said == (
        "The prescribed gate depends on ledger_size (designed at the smallest, 20; swept: 20, "
        "50), concurrent_share (designed at the largest, 0.5; swept: 0.25, 0.5) and "
        "gate.min_drop (0.15)."
    )


@pytest.fixture(scope="module")
def fate_sweep(sweep_of):
    entries = []
    for p in (0.5, 0.7, 0.9):
        scenario = {"p": p, "sessions": 20, "replications": 2000, "name": "fate"}
        result = ProcedureFateScenario(p=p, sessions=20, replications=2000).run(seed=3)
        entries.append(({"scenario": scenario, "rule": {"name": "confidence"}}, result))
    sweep = sweep_of(entries)
    sweep.answers = sweep_answers(sweep.runs)  # the exact fates, as the sweep computes them
    return sweep


def test_the_fate_section_states_its_world_and_that_the_headline_reads_p_and_horizon(
    fate_sweep,
):
    section = fate_section(fate_sweep)
    table, sentence = _world(section)
    assert table["value"].to_dict() == {
        "p": "swept: 0.5, 0.7, 0.9",
        "replications": "2000",
        "sessions": "20",
    }
    assert list(table["prescription reads it"]) == ["yes", "", "yes"]
    assert sentence == (
        "The headline (exact, flat_fate) depends on p (swept: 0.5, 0.7, 0.9) and sessions "
        "(20); the others (replications) change only the simulated evidence below, not it."
    )


def test_values_unset_and_mixed_read_as_the_scenario_words():
    assert value_text(pd.Series([None, 20.0, 50.0]), "ledger_size") == "swept: p0 known, 20, 50"
    assert value_text(pd.Series([0.3, 0.3]), "missing") == "0.3"
    assert value_text(pd.Series([None, None]), "missing") == "none"
    assert value_text(pd.Series(["fixed", "concurrent"]), "design") == "swept: fixed, concurrent"


def test_a_simulated_choice_says_it_holds_only_at_the_values_shown():
    runs = pd.DataFrame(
        {
            "params.scenario.users": [50, 50, 50],
            "params.scenario.reviewer_accuracy": [0.7, 0.8, 0.9],
            "params.scenario.helpful_share": [0.4, 0.4, 0.4],
            "params.scenario.min_writers": [1, 2, 3],
            "params.rule.name": ["x", "x", "x"],  # not a world group
        }
    )
    reads = ("scenario.users", "scenario.reviewer_accuracy")
    policy = ("scenario.min_writers",)  # what is chosen, not the world
    table, sentence = world_blocks(runs, reads, "The recommended policy", False, policy)
    assert list(table.frame["parameter"]) == ["helpful_share", "reviewer_accuracy", "users"]
    assert sentence == (
        "The recommended policy depends on users (50) and reviewer_accuracy (swept: 0.7, "
        "0.8, 0.9); it is chosen from simulated runs, so it holds only at the values shown "
        "for the others (helpful_share)."
    )
    whole = world_blocks(runs, None, "The verdict")
    assert (whole[0].frame["prescription reads it"] == "yes").all()
    assert whole[1].startswith("The verdict is read from the simulation of this whole world")
    assert world_blocks(runs[["params.rule.name"]], None) == []


def test_a_param_another_scenario_does_not_log_is_not_read_as_none():
    runs = pd.DataFrame(
        {
            "scenario": ["explore", "loop", "loop"],
            "params.scenario.sessions": [1000, 400, 400],
            "params.scenario.users": [50, None, None],
            "params.scenario.ledger_size": [None, 20, None],
        }
    )
    table = world_blocks(runs, None)[0].frame.set_index("parameter")["value"]
    assert table.to_dict() == {
        "ledger_size": "swept: p0 known, 20",  # loop logs it, unset in one run
        "sessions": "swept: 400, 1000",
        "users": "50",  # only explore logs it
    }
