"""Reports only read (issue 24 item 3): ``reports/`` imports no scenario and asks no design
question; the sweep asks them when it ends (``experiments.answers``) and the report reads
the answers back.

Statically, an AST walk over every module of ``reports/`` finds no import of
``simulators`` or ``experiments`` and no call (or import) of a name in ``COMPUTES``.
At run time, a report is built in a subprocess where ``simulators`` and ``experiments``
cannot be imported and every function of ``COMPUTES`` raises if called: it builds, with
the gate, confidence-rule, explore and fate sections, from the answers alone.
"""

from __future__ import annotations

import ast
import os
import pickle
import subprocess
import sys
from pathlib import Path

import pytest

from experiments.answers import sweep_answers
from procmem_core.logged import UNSET_WORDS
from reports.answers import answer
from reports.errors import ReportError
from reports.source import Sweep

ROOT = next(p for p in Path(__file__).resolve().parents if (p / "pyproject.toml").exists())
COMPUTES = ("design_gate", "design_rule", "plan", "fixed_power", "flat_fate", "GateScenario",
            "sensitivity", "rule_sensitivity", "explore_sensitivity", "review_sensitivity",
            "review_figures")  # fmt: skip
"""What a report must never call: the design questions, the planner, the exact fate, the
prescriptions' holds-if rows and the scenario simulation (the sweep computes them)."""
FORBIDDEN_MODULES = ("simulators", "experiments")
"""Packages a report never imports (the scenarios; the layer above it)."""


def _called(f: ast.expr) -> str:
    """The name a call calls: ``f`` of ``f(...)``, ``attr`` of ``mod.attr(...)``."""
    return f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""


def _violations(source: str, module: str) -> list[str]:
    """Every forbidden import and call in ``source``, as ``module:line what``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        where = f"{module}:{getattr(node, 'lineno', 0)}"
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            names = [node.module or ""]
            found += [f"{where} imports {a.name}" for a in node.names if a.name in COMPUTES]
        elif isinstance(node, ast.Call):
            f = node.func
            name = (
                f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""
            )
            found += [f"{where} calls {name}"] if name in COMPUTES else []
            continue
        else:
            continue
        found += [f"{where} imports {n}" for n in names if n.split(".")[0] in FORBIDDEN_MODULES]
    return found


def test_reports_import_no_scenario_and_call_no_design_function():
    files = sorted((ROOT / "reports").rglob("*.py"))
    assert len(files) > 30  # the walk sees the package
    found = [v for f in files for v in _violations(f.read_text(), str(f.relative_to(ROOT)))]
    assert not found, found


def test_the_walk_finds_what_it_forbids():
    """The walk is not blind: a module that imports a scenario and asks a design question
    is caught, both ways of writing each."""
    bad = (
        "import simulators.scenarios.gate\nfrom procmem_core.gates import design_gate\n"
        "from experiments import answers\nimport procmem_core.ab.planner as pl\n"
        "design_gate(q)\npl.plan(d)\n"
    )
    found = _violations(bad, "probe")
    assert [v.split(" ", 1)[1] for v in found] == [
        "imports simulators.scenarios.gate",
        "imports design_gate",
        "imports experiments",
        "calls design_gate",
        "calls plan",
    ]


def test_the_reports_unset_words_are_the_scenarios():
    """``procmem_core.logged.UNSET_WORDS`` is a copy (so a report needs no scenario): it
    equals every scenario's own ``unset_words``."""
    from simulators.scenarios import SCENARIOS

    declared = {}
    for name in SCENARIOS.names():
        declared |= SCENARIOS[name].unset_words
    assert declared == UNSET_WORDS and declared


def test_a_sweep_without_answers_names_the_run_and_says_rerun():
    sweep = Sweep("quickstart", "a" * 32, "old-sweep", None, (), ())
    with pytest.raises(ReportError) as err:
        answer(sweep, "gate", {"false_revert": 0.05, "missed_regression": 0.2})
    assert str(err.value) == (
        f"run {'a' * 32} (old-sweep) of experiment 'quickstart' has no gate design answer at "
        "false_revert 0.05, missed_regression 0.2 (answers/gate*.json): it was swept before "
        "sweeps computed their design answers (or is a single run); re-run the sweep (python "
        "-m experiments.run -m experiment=quickstart) or compute them: python -m "
        f"experiments.answers quickstart --run {'a' * 32}"
    )
    sweep.answers = {"gate": {"targets": {"false_revert": 0.05, "missed_regression": 0.2}}}
    with pytest.raises(ReportError, match=r"compute these with: python -m experiments.answers "
                       r"quickstart --run a{32} --max-false-revert 0.1"):  # fmt: skip
        answer(sweep, "gate", {"false_revert": 0.1, "missed_regression": 0.2},
               "--max-false-revert 0.1")  # fmt: skip


def _sweep() -> Sweep:
    """Gate, fate, exact-regime confidence and explore runs, in memory, with the answers
    the sweep would log (loose gate targets: a quick design)."""
    from procmem_core.gates import SPRTGate
    from simulators.scenarios.confidence import ConfidenceScenario
    from simulators.scenarios.explore import ExploreScenario
    from simulators.scenarios.fate import ProcedureFateScenario
    from simulators.scenarios.gate import GateScenario
    from simulators.users import UserPopulation

    gate = SPRTGate()
    pop = UserPopulation(base_rate=0.5, helpful_share=0.5, harmful_share=0.5,
                         helpful_effect=0.2, harmful_effect=0.2)  # fmt: skip
    entries = [
        ({"gate": {"name": "sprt", **gate.config()}, "scenario": {"ledger_size": 20}},
         GateScenario(gate=gate, ledger_size=20, replications=400).run(1)),
        ({"rule.name": "confidence", "scenario.p": 0.7, "scenario.sessions": 20},
         ProcedureFateScenario(p=0.7, sessions=20, replications=400).run(2)),
        ({"users": {"base_rate": 0.5, "helpful_effect": 0.2, "harmful_effect": 0.2},
          "scenario": {"sessions": 20, "procedures": 1}},
         ConfidenceScenario(population=pop, procedures=1, sessions=20,
                            replications=400).run(3)),
        ({"explore.explore_rate": 0.3, "explore.confidence_level": 0.95,
          "scenario.sessions": 200, "users.base_rate": 0.5},
         ExploreScenario(population=pop, explore_rate=0.3, sessions=200, users=20,
                         replications=100).run(4)),
    ]  # fmt: skip
    sweep = Sweep.from_results(entries, experiment="only-read")
    sweep.answers = sweep_answers(sweep.runs, false_revert=0.1, missed_regression=0.5)
    return sweep


BUILD = """
import importlib.abc, pickle, sys

class Refuse(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name.split(".")[0] in {forbidden!r}:
            raise ImportError(f"a report imported {{name}}")
        return None

sys.meta_path.insert(0, Refuse())
import procmem_core.ab.planner, procmem_core.flat.design, procmem_core.flat.fate
import procmem_core.gates
from reports.build import build_report
from reports.document import render_markdown
from reports.options import ReportOptions
from reports.recommend import GateTargets

called = []

def refusing(name):
    def refuse(*args, **kwargs):
        called.append(name)
        raise AssertionError(f"a report called {{name}}")
    return refuse

originals = {{}}
for mod in (procmem_core.ab.planner, procmem_core.flat.design, procmem_core.flat.fate,
            procmem_core.gates):
    for name in {computes!r}:
        if hasattr(mod, name):
            originals[id(getattr(mod, name))] = name
for mod in list(sys.modules.values()):
    for attr, value in list(vars(mod).items()) if hasattr(mod, "__dict__") else ():
        if id(value) in originals:
            setattr(mod, attr, refusing(originals[id(value)]))
with open(sys.argv[1], "rb") as f:
    sweep = pickle.load(f)
report = build_report(sweep, ReportOptions(gate=GateTargets(0.1, 0.5)))
md = render_markdown(report)
for title in ("## Revision gates", "## Confidence rule", "## One procedure's fate",
              "## Explore rate"):
    assert title in md, title
assert not called, called
loaded = sorted(m for m in sys.modules if m.split(".")[0] in {forbidden!r})
assert not loaded, loaded
print("built", len(md))
"""


@pytest.mark.slow
def test_a_report_builds_from_the_answers_alone(tmp_path):
    """In a process where the scenarios and the experiments cannot be imported and every
    design function raises, the report builds with its design sections."""
    path = tmp_path / "sweep.pkl"
    path.write_bytes(pickle.dumps(_sweep()))
    script = BUILD.format(forbidden=FORBIDDEN_MODULES, computes=COMPUTES)
    done = subprocess.run([sys.executable, "-c", script, str(path)], cwd=ROOT,
                          capture_output=True, text=True, timeout=900,
                          env=dict(os.environ, MPLBACKEND="Agg"))  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.startswith("built ")
