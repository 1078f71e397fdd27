"""The gate ranking table's last column on an in-memory sweep (the seed SPRT at alpha 0.05
and 0.1, 300 replications): it was headed 'runs p0+p1' and defined as 'expected runs to a
decision with no change plus with a drop of min_drop', but it held the ranking's objective,
the sessions when nothing changed alone (24.2 where runs at the drop add 30.9)."""

from __future__ import annotations

import pytest

from experiments.answers import sweep_answers
from procmem_core import SPRTGate
from reports.build import build_report
from reports.document import Table
from reports.provenance import GLOSSARY
from reports.source import Sweep
from simulators.scenarios.gate import GateScenario


def test_the_ranking_column_is_named_and_defined_as_what_it_holds():
    results = [
        ({"gate.alpha": a},
         GateScenario(gate=SPRTGate(alpha=a, beta=0.2), drops=(0.0, 0.15),
                      replications=300).run(seed=2))
        for a in (0.05, 0.1)
    ]  # fmt: skip
    sweep = Sweep.from_results(results)
    sweep.answers = sweep_answers(sweep.runs)
    section = next(s for s in build_report(sweep).sections if s.key == "gates")
    swept = [b for b in section.blocks if isinstance(b, Table)]
    table = next(b for b in swept if b.caption.startswith("Swept configurations"))
    frame = table.frame
    assert "runs p0+p1" not in frame.columns
    runs = sweep.runs.set_index("params.gate.alpha")
    for _, row in frame.iterrows():
        alpha = float(row["configuration"].split("alpha ")[1].split(",")[0])
        assert row["sessions if unchanged"] == pytest.approx(
            runs.at[alpha, "mean_runs_null"], abs=0.01
        )
    assert "when nothing changed" in GLOSSARY["sessions if unchanged"]
    assert "runs p0+p1" not in GLOSSARY
