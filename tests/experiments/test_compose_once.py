"""A sweep job's config is composed once (``experiments.plan.ComposedOnce``), and it is the
config Hydra's own loader composes; the fork server preloads MLflow's SQL store only for a
database (``experiments.launcher.preload``)."""

from __future__ import annotations

import pickle

from hydra import compose, initialize_config_dir
from hydra.core.global_hydra import GlobalHydra
from omegaconf import OmegaConf

from experiments.launcher import PRELOAD, SQL_STORE, preload
from experiments.plan import ComposedOnce
from experiments.run import CONF_DIR, register_schema

JOBS = [["case=gate_sprt", "gate.alpha=0.1"], ["case=fate_seed"]]


class Counting:
    """Hydra's loader, counting the compositions it is asked for."""

    def __init__(self, loader) -> None:
        self.loader, self.calls = loader, 0

    def load_sweep_config(self, master, overrides):
        self.calls += 1
        return self.loader.load_sweep_config(master, overrides)


def test_each_job_is_composed_once_and_equals_hydras_own_composition():
    register_schema()
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        master = compose("config", ["experiment=quickstart"], return_hydra_config=True)
        loader = GlobalHydra.instance().config_loader()
        counting = Counting(loader)
        once = ComposedOnce(counting)
        first = [once.load_sweep_config(master, o) for o in JOBS]  # the sweeper's check
        again = [once.load_sweep_config(master, o) for o in JOBS]  # the launcher
        assert counting.calls == len(JOBS)
        for overrides, a, b in zip(JOBS, first, again, strict=True):
            direct = loader.load_sweep_config(master, list(overrides))
            for got in (a, b):
                assert OmegaConf.to_yaml(got) == OmegaConf.to_yaml(direct)
                assert OmegaConf.is_struct(got) and got.hydra.overrides.task == overrides
            assert a is not b  # a launcher's change to its copy reaches no other caller
        assert first[0].gate.alpha == 0.1 and first[1].scenario.name == "fate"
        other = compose("config", ["experiment=quickstart"], return_hydra_config=True)
        once.load_sweep_config(other, JOBS[0])  # another sweep's master: composed anew
        assert counting.calls == len(JOBS) + 1
        shipped = pickle.loads(pickle.dumps(once))  # what a job process receives
        assert shipped.composed == {} and shipped.loader.calls == counting.calls


def test_the_fork_server_preloads_the_sql_store_only_for_a_database():
    assert preload("sqlite:////tmp/mlflow.db") == [*PRELOAD, SQL_STORE]
    assert preload("postgresql://u@127.0.0.1:5432/db") == [*PRELOAD, SQL_STORE]
    assert preload("http://127.0.0.1:5000") == list(PRELOAD)
    assert preload("https://mlflow.example") == list(PRELOAD)
