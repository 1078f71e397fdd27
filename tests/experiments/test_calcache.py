"""Where a job keeps shared calibrations (``experiments.calcache``), from its config."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from experiments.calcache import DEFAULT_CACHE, cache_folder, use_cache
from experiments.run import compose_job
from experiments.spec import build_spec
from experiments.stores import ROOT
from procmem_core.errors import ParameterError
from procmem_core.gates import calibration_store


@pytest.fixture(autouse=True)
def restore(monkeypatch):
    """The store and ``$PROCMEM_CALIBRATION_CACHE`` as they were (setenv records it)."""
    monkeypatch.setenv(calibration_store.CACHE_ENV, "")
    monkeypatch.delenv(calibration_store.CACHE_ENV)
    yield
    calibration_store.install(None)


def test_the_folder_is_under_the_repo_root_unless_absolute(tmp_path):
    assert cache_folder(DEFAULT_CACHE) == ROOT / ".procmem" / "calibrations"
    assert cache_folder(str(tmp_path)) == tmp_path
    assert cache_folder(None) is None


@pytest.mark.parametrize("bad", ["", "  ", 3, ["a"]])
def test_a_bad_setting_names_the_key(bad):
    with pytest.raises(ParameterError, match="calibration_cache"):
        cache_folder(bad)


def test_use_cache_installs_a_file_store_for_the_process_and_its_workers(tmp_path):
    assert use_cache(str(tmp_path)) == tmp_path
    store = calibration_store.current()
    assert isinstance(store, calibration_store.FileStore) and store.folder == tmp_path
    assert os.environ[calibration_store.CACHE_ENV] == str(tmp_path)
    assert use_cache(None) is None
    assert isinstance(calibration_store.current(), calibration_store.MemoryStore)
    assert calibration_store.CACHE_ENV not in os.environ


def test_a_job_uses_the_configured_cache_and_its_hash_ignores_it(tmp_path):
    overrides = ["case=gate_sprt", "scenario.replications=200"]
    specs = []
    for setting in (str(tmp_path), "null"):
        cfg = compose_job("quickstart", [*overrides, f"calibration_cache={setting}"])
        specs.append(build_spec(cfg))
        store = calibration_store.current()
        if setting == "null":
            assert isinstance(store, calibration_store.MemoryStore)
        else:
            assert isinstance(store, calibration_store.FileStore)
            assert Path(store.folder) == tmp_path
    assert specs[0].config_hash == specs[1].config_hash
    assert "calibration_cache" not in specs[0].params
