"""A report from a REAL small sweep: ``python -m experiments.run -m`` into a temporary store.

The sweep (quickstart cases: the flat rule's fate, a procedure library, the SPRT gate, a
withheld-vs-shown A/B and the closed loop: five jobs, the fewest that fill every section)
runs once per module in a subprocess with ``MLFLOW_TRACKING_URI`` pointing at a SQLite
file in a temporary folder;
``python -m reports`` then reads it back. reports never imports experiments.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from experiments.answers.__main__ import main as answers_main
from reports.__main__ import main
from reports.errors import NoSweepError
from reports.recommend import GateTargets
from reports.sections.gate import gate_section
from reports.sections.gate_tables import gate_runs
from reports.source import load_sweep
from reports.summary import sweep_section

pytestmark = pytest.mark.slow

ROOT = next(p for p in Path(__file__).resolve().parents if (p / "pyproject.toml").exists())
CASES = "fate_seed,confidence_seed,gate_sprt,explore_seed,loop_seed"
PNG = b"\x89PNG\r\n\x1a\n"
SECTIONS = [
    "Revision gates: which gate to use",
    "Confidence rule: which reward, penalty and threshold",
    "One procedure's fate under the flat rule",
    "Explore rate: how much to withhold",
    "Closed loop: does the engine learn the right procedures",
    "Withheld vs shown: the A/B table",
    "Simulation against exact answers",
    "What this sweep ran",
]


@pytest.fixture(scope="module")
def store(tmp_path_factory, new_mlflow_store):
    """Run the sweep; return ``(tracking uri, parent run id)``."""
    root = tmp_path_factory.mktemp("sweep")
    uri = new_mlflow_store(root / "mlflow.db")
    cmd = [
        sys.executable, "-m", "experiments.run", "-m", "experiment=quickstart",
        f"case={CASES}", "tracking.experiment=tiny", f"hydra.sweep.dir={root / 'multirun'}",
    ]  # fmt: skip
    done = subprocess.run(
        cmd, cwd=ROOT, env=dict(os.environ, MLFLOW_TRACKING_URI=uri),
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    from mlflow.tracking import MlflowClient

    client = MlflowClient(uri)
    exp = client.get_experiment_by_name("tiny")
    parents = [r for r in client.search_runs([exp.experiment_id])
               if "mlflow.parentRunId" not in r.data.tags]  # fmt: skip
    assert len(parents) == 1
    client.create_experiment("empty")
    return uri, parents[0].info.run_id


def test_report_from_real_sweep(store, tmp_path, monkeypatch, capsys):
    uri, pid = store
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    assert main(["tiny", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr()
    assert out.out.strip() == str(tmp_path / "index.html")
    md = (tmp_path / "report.md").read_text()
    assert re.findall(r"^## (.+)$", md, flags=re.M) == SECTIONS
    for title in SECTIONS:  # each section opens with one sentence answering its question
        answer = md.split(f"## {title}\n\n", 1)[1].split("\n", 1)[0]
        assert answer.endswith(".") and len(answer) > 40, title
        assert f"[{title}] {answer}" in out.err
    assert "seeds' default" in md
    pngs = sorted(tmp_path.glob("*.png"))
    names = {f.stem for f in pngs}
    assert {"gate_oc", "gate_runs", "gate_tradeoff", "fate_exclusion", "explore_power_cost",
            "explore_cs_path", "loop_success_over_time", "loop_gate_verdicts"} <= names  # fmt: skip
    appendix = (tmp_path / "appendix.md").read_text()
    ab = appendix.split("## Withheld vs shown: the A/B table\n", 1)[1].split("\n## ", 1)[0]
    for column in ("fixed-n 95 % interval (median)", "sequence at the end (median)",
                   "SRM flagged", "Holm p (median)", "BH p (median)",
                   "power after Holm"):  # fmt: skip
        assert column in ab, column  # issue 14: every comparison's reads, in the quickstart
    for f in pngs:
        data = f.read_bytes()
        assert data.startswith(PNG) and len(data) > 5000, f.name
        assert (f"({f.name})" in md) != (f"({f.name})" in appendix)  # on one page of the two
    html = (tmp_path / "index.html").read_text()
    pages = html + (tmp_path / "appendix.html").read_text()
    assert pages.count("data:image/png;base64,") == len(pngs)
    assert ".png'" not in pages  # self-contained: every figure embedded, none referenced
    assert all(f"<h2>{t}</h2>".replace("'", "&#x27;") in html for t in SECTIONS)

    from mlflow.tracking import MlflowClient

    client = MlflowClient(uri)
    children = client.search_runs(
        [client.get_run(pid).info.experiment_id], f"tags.`mlflow.parentRunId` = '{pid}'"
    )
    summary = pd.read_csv(tmp_path / "summary.csv")
    assert len(summary) == len(children) == 5
    assert set(summary["run_id"]) == {c.info.run_id for c in children}
    assert {"false_revert_rate", "false_revert_rate_se", "p_excluded_exact"} <= set(summary)
    logged = {a.path for a in client.list_artifacts(pid, "report")}
    expected = {f"report/{f.name}" for f in pngs}
    expected |= {"report/index.html", "report/report.md", "report/summary.csv"}
    assert expected | {"report/appendix.html", "report/appendix.md", "report/tables"} <= logged


def test_gate_pick_is_the_seed_default_and_exact_matches(store, monkeypatch, capsys):
    uri, pid = store
    sweep = load_sweep("tiny", uri=uri)
    # the sweep answered the design questions at the report's default targets when it
    # ended; the answers command adds them at these
    assert sorted(sweep.answers) == ["explore", "fate", "gate"]
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    argv = ["tiny", "--run", pid, "--max-false-revert", "0.2", "--max-missed-regression", "0.3"]
    assert answers_main(argv) == 0
    assert "answers/gate_false_revert0.2_missed_regression0.3.json" in capsys.readouterr().out
    sweep = load_sweep("tiny", uri=uri)
    gates = gate_runs(sweep)
    assert list(gates.rows["config"]) == ["seed default"]
    assert gates.default_label == "seed default"
    loose = gate_section(sweep, GateTargets(0.2, 0.3))
    # the section opens with the design question's answer; the sweep's own pick follows
    assert "at every prior rate p0 in" in loose.said
    ranking = [b for b in loose.blocks if isinstance(b, str) and b.startswith("The swept gate")]
    assert ranking[0].startswith("The swept gate to use, at its own max_runs, is seed default")
    assert "seeds' default" in ranking[0]
    # the simulated operating points sit on the exact curve within 4 SE
    from reports.sections.gate_tables import exact_curves, operating_points

    points = operating_points(sweep, gates)
    exact, bounds = exact_curves(sweep, gates, float(points["drop"].max()))
    for _, p in points.iterrows():
        e = exact.iloc[(exact["drop"] - p["drop"]).abs().argmin()]
        assert abs(e["drop"] - p["drop"]) < 1e-9
        assert abs(p["p_revert"] - e["p_revert"]) <= 4 * p["p_revert_se"]
    assert len(bounds) == 2 and (bounds["bound"] > 0).all()


def test_failed_child_is_listed_but_left_out(store):
    uri, pid = store
    from mlflow.tracking import MlflowClient

    client = MlflowClient(uri)
    exp_id = client.get_run(pid).info.experiment_id
    run = client.create_run(
        exp_id, tags={"mlflow.parentRunId": pid, "procmem.scenario": "gate"}, run_name="boom"
    )
    client.set_terminated(run.info.run_id, "FAILED")
    try:
        sweep = load_sweep("tiny", pid, uri)
        assert len(sweep.runs) == 6
        assert "1 job FAILED and is left out" in sweep_section(sweep).said
        assert len(gate_runs(sweep).rows) == 1
    finally:
        client.delete_run(run.info.run_id)


ERRORS = [
    (["nope"], "experiment='nope' does not exist"),
    (["empty"], "experiment='empty' has no runs"),
    (["tiny", "--run", "0" * 32], f"run='{'0' * 32}' does not exist"),
    (["tiny", "--max-false-revert", "0"], "false_revert=0.0"),
    (["tiny", "--target-power", "1.5"], "target_power=1.5"),
    (["tiny", "--target-sessions", "0"], "target_sessions=0"),
]


@pytest.mark.parametrize(("argv", "fragment"), ERRORS)
def test_cli_clear_errors(store, monkeypatch, capsys, argv, fragment):
    uri, _ = store
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    assert main([*argv, "--no-log"]) == 2
    err = capsys.readouterr().err
    assert fragment in err and "Traceback" not in err


@pytest.mark.parametrize(
    ("experiment", "run", "fragment"),
    [
        ("nope", None, "does not exist"),
        ("empty", None, "has no runs"),
        ("tiny", "f" * 32, "does not exist"),
    ],
)
def test_load_sweep_errors(store, experiment, run, fragment):
    uri, _ = store
    with pytest.raises(NoSweepError, match=re.escape(fragment)):
        load_sweep(experiment, run, uri)


def test_answers_carry_the_sweeps_own_numbers(store, tmp_path, monkeypatch):
    """Report sentences by their numbers: each is recomputed here from summary.csv (the
    sweep's metrics) or from an exact recursion written out in the test."""
    from fractions import Fraction

    uri, _ = store
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    assert main(["tiny", "--out", str(tmp_path), "--no-log"]) == 0
    md = (tmp_path / "report.md").read_text()
    answer = {t: md.split(f"## {t}\n\n", 1)[1].split("\n", 1)[0] for t in SECTIONS}
    summary = pd.read_csv(tmp_path / "summary.csv")
    # simulation against exact: every (x, x_se, x_exact) triple of every job, recounted
    z = []
    for _, row in summary.iterrows():
        for col in summary.columns:
            if f"{col}_se" in summary and f"{col}_exact" in summary:
                x, se, ex = row[col], row[f"{col}_se"], row[f"{col}_exact"]
                if not pd.isna(x) and not pd.isna(se) and not pd.isna(ex) and se > 0:
                    z.append(abs(x - ex) / se)
    sentence = answer["Simulation against exact answers"]
    assert f"all {len(z)} simulated figures" in sentence and len(z) >= 5
    assert f"largest |z| = {max(z):.2f}" in sentence and max(z) <= 4
    # the fate sentence: p 0.7, 20 sessions, seed rule; exact by a recursion over the float
    # states the seed's own code reaches (its update and its raw >= 0.55), probabilities
    # as Fractions
    alive, gone = {0.6: Fraction(1)}, Fraction(0)
    for _ in range(20):
        nxt: dict = {}
        for c, m in alive.items():
            for c2, w in ((min(1.0, c + 0.08), Fraction("0.7")),
                          (max(0.0, c - 0.15), Fraction("0.3"))):  # fmt: skip
                if c2 >= 0.55:
                    nxt[c2] = nxt.get(c2, 0) + m * w
                else:
                    gone += m * w
        alive = nxt
    fate = summary[summary["scenario"] == "fate"].iloc[0]
    assert fate["p_excluded_exact"] == pytest.approx(float(gone), abs=1e-12)
    sentence = answer["One procedure's fate under the flat rule"]
    assert f"({float(gone):.3f} exact" in sentence and "within 20 sessions" in sentence
    assert "break-even rate 0.652" in sentence and "(probability 0.30)" in sentence
    # the gate section's verdict on the swept gates quotes the job's own false-revert rate
    # and SE (the opening sentence is the design question's prescription)
    gate = summary[summary["scenario"] == "gate"].iloc[0]
    from reports.evidence import fmt

    swept = md.split("## Revision gates: which gate to use", 1)[1]
    heads = ("The swept gate to use, at its own", "No swept gate meets")
    swept = next(line for line in swept.splitlines() if line.startswith(heads))
    assert fmt(gate["false_revert_rate"], gate["false_revert_rate_se"]) in swept
    assert fmt(gate["missed_regression_rate"], gate["missed_regression_rate_se"]) in swept
    jobs = f"{len(summary)} job{'s' * (len(summary) != 1)}"
    assert f"This sweep ran {jobs} over scenario" in answer["What this sweep ran"]


def test_main_page_within_its_word_budget_and_moved_tables_kept(store, tmp_path):
    """Issue 30: the quickstart's main page reads in at most 3,000 words; every table
    moved off it is on the appendix page, linked from where it stood, and in
    tables/*.csv with the same numbers."""
    from reports.appendix import moved_blocks
    from reports.build import make_report
    from reports.document import PROVENANCE, Table, _cell, table_markdown
    from reports.length import QUICKSTART_WORDS, reader_words

    uri, _ = store
    report, _ = make_report("tiny", out=tmp_path, uri=uri, log=False)
    md = (tmp_path / "report.md").read_text()
    appendix = (tmp_path / "appendix.md").read_text()
    words = reader_words(md)
    assert 500 < words <= QUICKSTART_WORDS, words
    moved = moved_blocks(report)
    tables = [m for m in moved if isinstance(m.block, Table)]
    assert len(tables) >= 10
    for m in moved:  # each linked where it stood; the provenance once, from the end
        link = f"[{m.link_text}](appendix.md#{m.anchor})"
        assert (link in md) == (m.title != PROVENANCE), m.label
        assert f'<a id="{m.anchor}"></a>' in appendix
    assert md.rstrip().endswith("[in the appendix](appendix.md#provenance).")
    assert '<a id="provenance"></a>' in appendix and "- Code: commit " in appendix
    csvs = sorted(p.name for p in (tmp_path / "tables").glob("*.csv"))
    assert csvs == sorted(m.csv.split("/")[1] for m in tables)
    for m in tables:
        shown = table_markdown(m.block.frame)
        assert shown in appendix and shown not in md, m.label
        data = pd.read_csv(tmp_path / m.csv, dtype=str, keep_default_na=False)
        assert list(data.columns) == [str(c) for c in m.block.frame.columns], m.label
        # the CSV's full-precision numbers, shown as the page shows them, are the page's
        as_shown = data.map(lambda v: _cell(float(v)) if re.fullmatch(FLOAT, v) else v)
        assert table_markdown(as_shown) == shown, m.label


FLOAT = r"-?(\d+\.\d*|\d*\.\d+)(e[-+]?\d+)?|-?\d+e[-+]?\d+|-?inf|nan"
"""A float as pandas writes it to CSV (ints have no point and stay as written)."""


def test_many_swept_params_are_counted_and_listed_with_their_values(sweep_of):
    """More than ``NAMED_SWEPT`` swept params: the sentence counts them, and a table lists
    each with the values it took (the quickstart's sentence named 23 keys inline)."""
    from reports.summary import NAMED_SWEPT
    from simulators.scenarios.fate import ProcedureFateScenario

    result = ProcedureFateScenario(p=0.7, sessions=5, replications=50).run(seed=1)
    keys = [f"k{i}" for i in range(NAMED_SWEPT + 1)]
    entries = [
        ({"scenario": {"name": "fate", "p": 0.7}, "knob": {k: v for k in keys}}, result)
        for v in (1, 2)
    ]
    section = sweep_section(sweep_of(entries))
    assert f"sweeping {NAMED_SWEPT + 1} parameters (each listed with its values)" in section.said
    table = next(b.frame for b in section.blocks if getattr(b, "caption", "").startswith("Swept"))
    assert list(table["parameter"]) == [f"knob.{k}" for k in keys]
    assert set(table["values"]) == {"1, 2"}
    half = [({**c, "knob": {**c["knob"], "k0": None if i else 3.0}}, r)
            for i, (c, r) in enumerate(entries)]  # fmt: skip
    listed = next(b.frame for b in sweep_section(sweep_of(half)).blocks
                  if getattr(b, "caption", "").startswith("Swept"))  # fmt: skip
    assert listed.set_index("parameter").at["knob.k0", "values"] == "3, unset"
    few = sweep_section(sweep_of([({**c, "knob": {"k0": c["knob"]["k0"]}}, r)
                                  for c, r in entries]))  # fmt: skip
    assert "sweeping knob.k0." in few.said
    assert not any(getattr(b, "caption", "").startswith("Swept") for b in few.blocks)
