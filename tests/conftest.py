"""Shared fixtures: compose the real config tree, run the real entry point small.

As in lightning-hydra-template: tests compose ``conf/`` with Hydra's compose API (no
mock of it), and sweeps run ``python -m experiments.run`` in a subprocess with their
MLflow store (``MLFLOW_TRACKING_URI``) and Hydra folders in ``tmp_path``.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
from omegaconf import DictConfig

ROOT = Path(__file__).resolve().parents[1]
CONF = ROOT / "conf"
PRESETS = ("quickstart", "gate_tuning", "explore_tradeoff", "confidence_sweep", "loop", "seed_demo")


def compose_config(preset: str, overrides: Sequence[str] = ()) -> DictConfig:
    """The job config of ``experiment=<preset>`` plus ``overrides``, with its hydra node.

    HydraConfig is set to it, as during a run, so ``${hydra:...}`` interpolations resolve.
    """
    from hydra import compose, initialize_config_dir
    from hydra.core.hydra_config import HydraConfig

    import experiments.schema  # noqa: F401 (registers the structured configs)

    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        cfg = compose(
            "config", overrides=[f"experiment={preset}", *overrides], return_hydra_config=True
        )
    HydraConfig.instance().set_config(cfg)
    return cfg


@pytest.fixture
def compose_preset() -> Callable[..., DictConfig]:
    return compose_config


def run_cli(
    args: Sequence[str], store: Path, timeout: float = 300, **popen: object
) -> subprocess.CompletedProcess:
    """``python -m experiments.run <args>`` with the MLflow store in ``store``."""
    env = dict(os.environ, MLFLOW_TRACKING_URI=f"sqlite:///{store / 'mlflow.db'}")
    return subprocess.run(
        [sys.executable, "-m", "experiments.run", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        **popen,
    )


def client_for(store: Path) -> Any:
    from mlflow.tracking import MlflowClient

    return MlflowClient(f"sqlite:///{store / 'mlflow.db'}")
