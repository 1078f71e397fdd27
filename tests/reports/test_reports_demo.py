"""The seed_demo and llm_replay sections, from REAL runs logged to a temporary store.

Two subprocesses run side by side: ``python -m experiments.run experiment=seed_demo``
(a single run) and a four-job ``-m experiment=llm_replay`` sweep against the offline
model: ``llm.max_tokens=2000`` completes, ``100`` cuts the extraction off, recorded as
``failed=1`` with ``error.json`` (``on_error=record``) or raised into a FAILED job with
``traceback.txt`` (``on_error=raise``). The reports are then built in process.
"""

from __future__ import annotations

import html
import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from reports.build import build_report
from reports.document import Preformatted, Report, Section, render_html, render_markdown
from reports.sections.llm_replay import replay_section
from reports.sections.seed_demo import seed_demo_section
from reports.source import load_sweep

ROOT = next(p for p in Path(__file__).resolve().parents if (p / "pyproject.toml").exists())
SEED_TEXT = (ROOT / "tests" / "data" / "seed_demo_expected.txt").read_text(encoding="utf-8")
PNG = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def runs(tmp_path_factory, new_mlflow_store):
    """Run both presets at once, each into its own store (two processes creating one new
    SQLite store at the same time race on its tables); return the folder and the URIs."""
    root = tmp_path_factory.mktemp("demo")
    uris = {k: new_mlflow_store(root / f"{k}.db") for k in ("seed", "replay")}
    commands = {
        "seed": ["experiment=seed_demo", f"hydra.run.dir={root / 'seed'}"],
        "replay": [
            "-m", "experiment=llm_replay", "llm.max_tokens=2000,100",
            "replay.on_error=record,raise", f"hydra.sweep.dir={root / 'replay'}",
        ],
    }  # fmt: skip
    run = [sys.executable, "-m", "experiments.run"]
    pipes = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE, "text": True}
    procs = {
        k: subprocess.Popen(
            [*run, *args], cwd=ROOT, env=dict(os.environ, MLFLOW_TRACKING_URI=uris[k]), **pipes
        )
        for k, args in commands.items()
    }
    out = {k: p.communicate(timeout=300) for k, p in procs.items()}
    assert procs["seed"].returncode == 0, out["seed"][1][-3000:]
    assert out["seed"][0] == SEED_TEXT
    # the on_error=raise job fails, so the sweep exits 1 after running every job
    assert procs["replay"].returncode == 1, out["replay"][1][-3000:]
    assert "FAILED jobs (1)" in out["replay"][0] + out["replay"][1]
    return root, uris


def written(report: Report) -> tuple[str, str]:
    return render_html(report), render_markdown(report)


@pytest.mark.slow
def test_seed_demo_section_answers_with_the_final_confidences_and_the_prompt(runs):
    root, uris = runs
    sweep = load_sweep("seed_demo", uri=uris["seed"])
    section = seed_demo_section(sweep)
    assert section is not None and replay_section(sweep) is None
    assert section.said == (
        "The seed's demo shows confidence following outcomes: 'Quantify the worst case' ends "
        "at 0.77, above the prompt threshold 0.55, and 'Push equity' ends at 0.30, below it, "
        "so only 'Quantify the worst case' is in the system prompt."
    )
    report = build_report(sweep)
    assert [s.key for s in report.sections] == ["seed_demo", "sweep"]
    page, md = written(report)
    # the figure is the job's own PNG, embedded
    (fig,) = section.figures
    job_png = (root / "seed" / "artifacts" / "figures" / "confidence_paths.png").read_bytes()
    assert fig.png == job_png and fig.png.startswith(PNG)
    assert "data:image/png;base64," in page
    assert f"![{fig.name}]({fig.name}.png)" in md
    # the printed text, every line, escaped in a <pre> block and fenced in Markdown
    (pre,) = [b for b in section.blocks if isinstance(b, Preformatted)]
    assert pre.text == SEED_TEXT
    assert f"<pre>{html.escape(SEED_TEXT)}</pre>" in page
    assert f"```\n{SEED_TEXT.rstrip()}\n```" in md
    for line in SEED_TEXT.splitlines():
        assert html.escape(line) in page
    # the confidence paths as a table: the worst-case procedure's six values
    (table,) = [b for b in section.blocks if hasattr(b, "frame")]
    row = table.frame.set_index("procedure").loc["Quantify the worst case"]
    assert list(row.round(2)) == [0.60, 0.68, 0.76, 0.61, 0.69, 0.77]


def _replay_runs(uri: str):
    sweep = load_sweep("llm_replay", uri=uri)
    runs = sweep.runs.set_index(["params.llm.max_tokens", "params.replay.on_error"])
    return sweep, runs


@pytest.mark.slow
def test_replay_section_reports_learning_cost_and_both_kinds_of_failure(runs):
    root, uris = runs
    sweep, by_config = _replay_runs(uris["replay"])
    section = replay_section(sweep)
    assert section is not None and seed_demo_section(sweep) is None
    ok, recorded, raised = (
        by_config.loc[k] for k in ((2000, "record"), (100, "record"), (100, "raise"))
    )
    assert raised["status"] == "FAILED" and recorded["failed"] == 1
    a = section.said
    assert a.startswith("2 of 4 replays completed: ")
    assert (
        f"learned 3 procedure(s) (0 dropped, 3 shown in session 2's prompt) for "
        f"{ok['tokens_total']:,.0f} tokens ({ok['tokens_learn']:,.0f} for the extraction)"
    ) in a
    assert (
        f"failed at the learn stage (ExtractionError) after learning 0 procedure(s), spending "
        f"{recorded['tokens_total']:,.0f} tokens"
    ) in a
    assert "FAILED (ExtractionError; traceback below) with no metrics logged" in a
    cost = next(b for b in section.blocks if hasattr(b, "frame")).frame.set_index("run")
    # a raised failure logs the artifacts it wrote (error.json), so its stage is known too
    assert list(cost["outcome"]) == ["completed", "completed", "failed at learn", "FAILED at learn"]
    assert cost["tokens"].iloc[0] == ok["tokens_total"]
    page, md = written(build_report(sweep))
    # the procedures the completed run extracted, from its own artifact
    job = next(p for p in (root / "replay").glob("*/artifacts") if (p / "procedures.json").exists())
    titles = [p["title"] for p in json.loads((job / "procedures.json").read_text())["procedures"]]
    assert len(titles) == 3
    for title in titles:
        assert f"<td>{html.escape(title)}</td>" in page
    prompt_2 = (job / "system_prompt_2.txt").read_text(encoding="utf-8")
    prompt_1 = (job / "system_prompt_1.txt").read_text(encoding="utf-8")
    assert f"<pre>{html.escape(prompt_2)}</pre>" in page
    assert f"<pre>{html.escape(prompt_1)}</pre>" in page
    # error.json for the recorded failure, the traceback for the raised one
    assert "Failed at the learn stage (error.json)" in page
    assert "reason: truncated" in page
    # the raised one logged its error.json too, and its traceback follows it
    assert md.count("Failed at the learn stage (error.json)") == 2
    # (its last lines: the frames where it was raised and the exception itself)
    assert "procmem_core/learn/client.py" in md
    assert "ExtractionError: extraction failed (truncated): reply cut off at max_tokens=" in md
    # the calls table: two completed runs and the recorded failure logged tables/calls
    assert page.count("Model calls (tables/calls.parquet)") == 3
    assert "<td>extraction</td>" in page and "<td>length</td>" in page


@pytest.mark.slow
def test_a_single_replay_run_is_answered_in_one_sentence(runs):
    uri = runs[1]["replay"]
    _, by_config = _replay_runs(uri)
    ok = by_config.loc[(2000, "record")]
    sweep = load_sweep("llm_replay", run_id=ok["run_id"], uri=uri)
    section = replay_section(sweep)
    assert section.said.startswith(
        "The model procmem-offline learned 3 procedure(s) (0 dropped, 3 shown in session 2's "
        f"prompt) for {ok['tokens_total']:,.0f} tokens"
    )
    assert section.said.endswith(f"over {ok['n_calls']:.0f} calls.")
    procs = next(b for b in section.blocks if getattr(b, "caption", "").startswith("Procedures"))
    assert list(procs.frame["in prompt 2"]) == ["yes"] * 3


@pytest.mark.parametrize(
    ("text", "html_part", "md_part"),
    [
        ("a <b> & 'c'", "<pre>a &lt;b&gt; &amp; &#x27;c&#x27;</pre>", "```\na <b> & 'c'\n```"),
        ("x ``` y\n", "<pre>x ``` y\n</pre>", "````\nx ``` y\n````"),
    ],
)
def test_preformatted_text_is_escaped_and_fenced(text, html_part, md_part):
    section = Section("k", "t", "answer", [Preformatted("caption", text)])
    report = Report("e", "p", "h", [section], pd.DataFrame())
    assert html_part in render_html(report)
    assert md_part in render_markdown(report)


@pytest.mark.slow
def test_a_seed_demo_run_without_text_or_threshold_falls_back_to_the_rule_param(runs):
    """A run logged before the task wrote ``seed_demo.txt`` and its ``threshold``."""
    from mlflow.tracking import MlflowClient

    uri = runs[1]["seed"]
    client = MlflowClient(uri)
    exp = client.create_experiment("seed_demo_old")
    run = client.create_run(exp, tags={"procmem.scenario": "seed_demo"}, run_name="old")
    rid = run.info.run_id
    client.log_param(rid, "rule.threshold", "0.7")
    client.log_metric(rid, "final_confidence.Quantify the worst case", 0.77)
    client.log_metric(rid, "final_confidence.Push equity", 0.3)
    client.set_terminated(rid, "FINISHED")
    section = seed_demo_section(load_sweep("seed_demo_old", uri=uri))
    assert section.said == (
        "The seed's demo shows confidence following outcomes: 'Quantify the worst case' ends "
        "at 0.77, above the prompt threshold 0.70, and 'Push equity' ends at 0.30, below it, "
        "so only 'Quantify the worst case' is in the system prompt."
    )
    assert section.figures == []
    assert "The run did not log the printed text (seed_demo.txt)." in section.blocks
