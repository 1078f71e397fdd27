"""Shared fixtures: compose the real config tree, keep MLflow stores in ``tmp_path``.

As in lightning-hydra-template: tests compose ``conf/`` with Hydra's compose API
(``experiments.run.compose_job``, no mock of it), and sweeps run
``python -m experiments.run`` in a subprocess with their MLflow store
(``MLFLOW_TRACKING_URI``) and Hydra folders in a temporary directory.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from omegaconf import DictConfig

from experiments.run import compose_job


@pytest.fixture
def compose_preset() -> Callable[..., DictConfig]:
    """``compose_preset("gate_tuning", ["gate.alpha=0.1"])``: a job's composed config."""
    return compose_job


@pytest.fixture
def tracking_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A temporary SQLite MLflow store for code running in this process."""
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{tmp_path / 'mlflow.db'}")
    return tmp_path / "mlflow.db"
