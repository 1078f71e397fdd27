"""``LoopScenario(export_log=N)``: the loop's replications as one session log (docs/logs.md)
whose analysis recovers the loop's own known lifts, the same bytes for the same seed."""

from __future__ import annotations

import io

import numpy as np
import pandas as pd
import pytest

from experiments.analyze.read import read_log
from procmem_core.errors import ParameterError
from procmem_core.logs.lifts import estimate_lifts
from simulators.scenarios.loop import LoopScenario

LOOP = {"sessions": 300, "replications": 2, "export_log": 2, "explore_rate": 0.3,
        "strike_limit": 0}  # fmt: skip


@pytest.fixture(scope="module")
def exported():
    return LoopScenario(**LOOP).run(11)


def test_lifts_of_the_exported_log_match_the_loops_truth(exported, tmp_path):
    log, truth = exported.tables["sessions"], exported.tables["sessions_truth"]
    log.to_parquet(tmp_path / "sessions.parquet")
    lifts = estimate_lifts(read_log(tmp_path).sessions).columns
    got = pd.DataFrame({k: lifts[k] for k in ("key", "lift", "se", "n_shown", "n_withheld")})
    both = got.merge(truth, on="key", validate="one_to_one")
    assert len(both) == len(got) and set(got["key"]) <= set(truth["key"])
    assert (both["n_shown"] == both["shown"]).all()  # the same sessions counted both ways
    sized = both[(both["n_shown"] >= 30) & (both["n_withheld"] >= 15)]
    assert len(sized) >= 4
    z = (sized["lift"] - sized["true_lift"]) / sized["se"]
    assert (np.abs(z) <= 4).all(), sized.assign(z=z)
    assert (sized["true_lift"] > 0).any()  # the loop's procedures beat the base rate


def test_export_holds_every_session_of_the_exported_replications(exported):
    log = exported.tables["sessions"]
    assert len(log) == LOOP["sessions"] * LOOP["export_log"]
    assert log["session_id"].is_unique and (log["explore_rate"] == 0.3).all()
    withheld = log.groupby(log["session_id"].str.split("-").str[0])["withheld"].sum()
    rate = exported.metrics["withheld_rate"]
    assert withheld.sum() == pytest.approx(rate * LOOP["sessions"] * LOOP["replications"])
    assert set(log["outcome"]) <= {0.0, 1.0} and (log.loc[log["withheld"], "top_key"] != "").all()


def test_export_is_byte_identical_for_the_same_seed(exported):
    again = LoopScenario(**LOOP).run(11)
    for name in ("sessions", "sessions_truth"):
        a, b = io.BytesIO(), io.BytesIO()
        exported.tables[name].to_parquet(a)
        again.tables[name].to_parquet(b)
        assert a.getvalue() == b.getvalue()
        assert exported.tables[name].to_csv().encode() == again.tables[name].to_csv().encode()
    other = LoopScenario(**LOOP).run(12).tables["sessions"]
    assert not other["outcome"].equals(exported.tables["sessions"]["outcome"])


def test_no_export_by_default_and_bad_count_refused():
    assert "sessions" not in LoopScenario(sessions=8, replications=1).run(0).tables
    with pytest.raises(ParameterError, match="export_log"):
        LoopScenario(export_log=-1)


def test_export_is_a_config_switch(compose_preset):
    from experiments.build import build_scenario

    cfg = compose_preset("quickstart", ["case=loop_seed", "scenario.export_log=2"])
    assert build_scenario(cfg).export_log == 2
    assert build_scenario(compose_preset("quickstart", ["case=loop_seed"])).export_log == 0
