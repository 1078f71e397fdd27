"""The real quickstart preset's report (all 14 cases at the preset's sizes, as `make run`
builds it) reads within its word budget, and every section opens in at most two
sentences (issue 30, "a length a reader finishes")."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from reports.length import OPENING_SENTENCES, QUICKSTART_WORDS, reader_words, sentences

pytestmark = pytest.mark.slow

ROOT = next(p for p in Path(__file__).resolve().parents if (p / "pyproject.toml").exists())


def test_the_quickstart_presets_report_fits_its_budget_and_opens_short(tmp_path, new_mlflow_store):
    from reports.build import make_report

    uri = new_mlflow_store(tmp_path / "mlflow.db")
    cmd = [sys.executable, "-m", "experiments.run", "-m", "experiment=quickstart",
           "progress=off", f"hydra.sweep.dir={tmp_path / 'multirun'}"]  # fmt: skip
    done = subprocess.run(
        cmd, cwd=ROOT, env=dict(os.environ, MLFLOW_TRACKING_URI=uri),
        capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    out = tmp_path / "report"
    report, _ = make_report("quickstart", out=out, uri=uri, log=False)
    words = reader_words((out / "report.md").read_text())
    assert 1500 < words <= QUICKSTART_WORDS, words
    assert len(report.sections) >= 8
    for section in report.sections:
        assert len(sentences(section.answer)) <= OPENING_SENTENCES, section.title
