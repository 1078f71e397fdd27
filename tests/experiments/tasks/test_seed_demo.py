"""The seed demo prints exactly the seed's text and saves its figure."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from experiments.tasks.seed_demo import demo_text

ROOT = next(p for p in Path(__file__).resolve().parents if (p / "pyproject.toml").exists())
EXPECTED = (ROOT / "tests" / "data" / "seed_demo_expected.txt").read_text(encoding="utf-8")
SEED = ROOT.parent / "shared" / "seeds" / "notebook-procedural-memory.txt"


def test_expected_copy_is_the_seeds_text():
    if not SEED.exists():
        pytest.skip(f"the seed is not beside the clone ({SEED})")
    seed = SEED.read_text(encoding="utf-8")
    assert EXPECTED.rstrip("\n") in seed


def test_demo_text_matches_seed():
    assert demo_text() == EXPECTED


def test_entry_point_prints_seed_text_and_saves_figure(tmp_path, new_mlflow_store):
    env = dict(os.environ, MLFLOW_TRACKING_URI=new_mlflow_store(tmp_path / "mlflow.db"))
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "experiments.run",
            "experiment=seed_demo",
            f"hydra.run.dir={tmp_path / 'run'}",
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == EXPECTED
    figures = list((tmp_path / "run").rglob("confidence_paths.png"))
    assert figures and figures[0].stat().st_size > 10_000
