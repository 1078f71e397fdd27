"""The runs behind a caption, in words: one replication and several seeds (issue 30:
singular and plural as the numbers are)."""

from __future__ import annotations

import pandas as pd

from reports.provenance import run_counts


def test_one_replication_and_several_seeds_are_said_as_they_are():
    one = pd.DataFrame({"params.scenario.replications": [1], "seed": [0]})
    # was: "1 run, 1 replications each, seed 0"
    assert run_counts(one, ["params.scenario.replications"]) == "1 run, 1 replication each, seed 0"
    three = pd.DataFrame({"params.scenario.replications": [4, 4, 4], "seed": [0, 1, 2]})
    # was: "3 runs, 4 replications each, seed 0, 1, 2"
    assert run_counts(three, ["params.scenario.replications"]) == (
        "3 runs, 4 replications each, seeds 0, 1, 2"
    )
    mixed = pd.DataFrame({"params.scenario.replications": [1, 20], "seed": [5, 5]})
    assert (
        run_counts(mixed, ["params.scenario.replications"]) == "2 runs, 1-20 replications, seed 5"
    )
