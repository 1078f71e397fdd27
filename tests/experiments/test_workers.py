"""The ``workers`` setting: how many processes one job's chunks use, never what it
computes (it is not part of the job's identity, so its seed and numbers do not move)."""

from __future__ import annotations

import pytest

from experiments.build import validate
from experiments.run import compose_job
from experiments.spec import config_hash, job_workers
from procmem_core.errors import ParameterError
from simulators.parallel import available_cores


def test_workers_is_not_part_of_the_job_identity():
    one = compose_job("quickstart", ["case=gate_sprt", "workers=1"])
    two = compose_job("quickstart", ["case=gate_sprt", "workers=2"])
    assert config_hash(one) == config_hash(two)
    validate(two)


def test_auto_is_the_jobs_share_of_the_cores():
    cores = available_cores()
    assert job_workers("auto") == cores
    assert job_workers("auto", concurrent_jobs=2) == max(1, cores // 2)
    assert job_workers("auto", concurrent_jobs=10 * cores) == 1
    assert job_workers(3) == 3 and job_workers("4") == 4


@pytest.mark.parametrize("bad", [0, -1, "two", "1.5"])
def test_a_bad_workers_value_is_refused_naming_it(bad):
    with pytest.raises(ParameterError, match="workers"):
        job_workers(bad)
    cfg = compose_job("quickstart", ["case=gate_sprt", f"workers={bad}"])
    with pytest.raises(ParameterError, match="workers"):
        validate(cfg)
