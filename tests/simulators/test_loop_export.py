"""``LoopScenario(export_log=N)``: the loop's replications as one session log (docs/logs.md)
whose analysis recovers the loop's own known lifts and replays its gates on its own ledger
and revisions, valid under the schema, the same bytes for the same seed."""

from __future__ import annotations

import io
import json

import numpy as np
import pandas as pd
import pytest

from experiments.analyze.read import read_log
from procmem_core.errors import ParameterError
from procmem_core.logs.lifts import estimate_lifts
from procmem_core.logs.replay import gate_replay
from procmem_core.logs.schema import schema
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
    for name in ("sessions", "sessions_truth", "runs", "revisions"):
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


def _write(result, folder):
    """The export as a job writes it: ``tables/<name>.parquet`` (experiments.job)."""
    folder.mkdir()
    for name, table in result.tables.items():
        table.to_parquet(folder / f"{name}.parquet", index=False)
    return folder


def test_export_validates_against_the_schema(exported, tmp_path):
    """Every row of the three tables is valid under the shipped JSON Schema, and the log
    reads and checks (every run's revision is listed); the revisions are the loop's."""
    from jsonschema import Draft202012Validator

    for name in ("sessions", "runs", "revisions"):
        validator = Draft202012Validator(schema()["tables"][name])
        rows = json.loads(exported.tables[name].to_json(orient="records"))
        errors = [e.message for row in rows for e in validator.iter_errors(row)]
        assert rows and errors == [], (name, errors[:3])
    log = read_log(_write(exported, tmp_path / "tables"))
    assert log.runs is not None and log.revisions is not None
    revs, reps = exported.tables["revisions"], LOOP["export_log"]
    first, later = revs[revs["prior_revision"].isna()], revs[revs["prior_revision"].notna()]
    assert (first["verdict"] == "accepted").all() and (first["revision"] == "1").all()
    assert len(first) == reps * 3 * 2  # tasks x procedures_per_task per replication
    decided = later[later["verdict"].isin(["accepted", "reverted"])]
    assert len(later) == pytest.approx(exported.metrics["revisions_proposed"] * reps)
    assert len(decided) == pytest.approx(exported.metrics["revisions_decided"] * reps)
    assert (decided["decided_at"] > decided["proposed_at"]).all()
    assert later.loc[later["verdict"] == "pending", "decided_at"].isna().all()
    runs = exported.tables["runs"]
    assert set(runs["key"]) <= set(revs["key"]) and set(runs["key"]) <= set(
        exported.tables["sessions"]["top_key"]
    )


def _check_replay(result, replay: pd.DataFrame) -> tuple[int, int]:
    """The SPRT replay against the store's own SPRT records (``gate_decisions``): a
    revision the store decided is decided the same way at the same revision run; one
    still pending is pending in the replay, or decided only at a run after the store's
    last judgement (the ledger holds runs no ``evolve`` has looked at yet). Returns the
    agreements with the logged verdicts and the revisions replayed."""
    gd = result.tables["gate_decisions"]
    gd = gd[gd["gate"] == "sprt"].assign(
        ref="r" + gd["replication"].astype(str) + ":" + gd["namespace"] + "/" + gd["key"]
    )
    agree = 0
    for row in replay.itertuples():
        mine = gd[(gd["ref"] == row.key) & (gd["revision"].astype(str) == str(row.revision))]
        if row.logged_verdict in ("accepted", "reverted"):
            last = mine.iloc[-1]
            assert (
                last["outcome"] == {"accepted": "accept", "reverted": "revert"}[row.logged_verdict]
            )
            assert row.sprt_verdict == row.logged_verdict, row
            assert row.sprt_runs == last["revision_runs"], row
        else:  # pending: the store last judged at `judged` revision runs (none yet: 0)
            judged = mine["revision_runs"].max() if len(mine) else 0
            assert row.logged_verdict == "pending" and (mine["outcome"] == "continue").all()
            assert row.sprt_verdict == "pending" or row.sprt_runs > judged, row
        agree += row.sprt_verdict == row.logged_verdict
    return agree, len(replay)


def test_analyze_replays_the_loops_gates_on_its_own_ledger(exported, tmp_path):
    """``experiments.analyze`` on the job's ``tables/``: seed 11 has 10 revisions with a
    prior; the SPRT replay agrees with 9 logged verdicts; the tenth is pending in the store
    and reverted at its 50th run, after the store's last judgement at its 49th."""
    from experiments.analyze import analyze

    analyze(str(_write(exported, tmp_path / "tables")), tmp_path / "out", track_run=False,
            design=False, prescribe=False)  # fmt: skip
    replay = pd.read_csv(tmp_path / "out" / "gate_replay.csv", keep_default_na=False)
    assert _check_replay(exported, replay) == (9, 10)
    late = replay[replay["sprt_verdict"] != replay["logged_verdict"]]
    assert late[["logged_verdict", "sprt_verdict", "sprt_runs"]].values.tolist() == [
        ["pending", "reverted", 50]
    ]
    report = (tmp_path / "out" / "report.md").read_text()
    assert "Agreement with the 10 logged verdicts: sprt 9," in report


def test_replay_agrees_with_concurrent_control(tmp_path):
    """With the prior served in 30 % of a pending revision's sessions (its runs are
    concurrent events of the replay): all 13 revisions of seed 11 agree."""
    from experiments.analyze.steps import default_gates

    result = LoopScenario(**LOOP, concurrent_share=0.3).run(11)
    replay = pd.DataFrame(gate_replay(read_log(_write(result, tmp_path / "t")), default_gates()))
    runs, revs = result.tables["runs"], result.tables["revisions"].dropna(subset="prior_revision")
    served = sum(((runs["key"] == r.key) & (runs["revision"] == r.prior_revision)
                  & (runs["time"] > r.proposed_at)).sum() for r in revs.itertuples())  # fmt: skip
    assert served > 0  # the prior's runs after a proposal: the replay's concurrent events
    assert _check_replay(result, replay) == (13, 13)
