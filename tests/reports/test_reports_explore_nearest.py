"""The explore opening when no swept rate and estimator reaches the power: "the most
powerful" is an ordering, stated only beyond 2 SE of the difference (issue 30 item 6).
An in-memory sweep (ExploreScenario, 300 sessions, explore rates 0.05 and 0.3, 40
replications, seed 1) read 'the most powerful: power 0.25 ± 0.068, cuped at 0.3' with 19
other candidates within 2 SE of it, none named."""

from __future__ import annotations

import pandas as pd

from reports.sections.explore_choice import choice_sentence, choice_table, choose


def _cands(powers: list[tuple[str, float, float, float]]) -> pd.DataFrame:
    return pd.DataFrame(
        [
            {"lift_condition": "lift 0.08", "true_lift": 0.08, "sessions": 300,
             "explore_rate": rate, "estimator": e, "guarantee": "fixed-n", "power": p,
             "power_se": se, "cost": 300 * rate * 0.08, "cost_se": 0.1, "valid": True,
             "run": f"{e}-{rate}"}
            for e, rate, p, se in powers
        ]
    )  # fmt: skip


def test_the_most_powerful_names_what_the_noise_cannot_order_below_it():
    cands = _cands(
        [("cuped", 0.3, 0.25, 0.068), ("dim", 0.3, 0.22, 0.066), ("ipw", 0.3, 0.21, 0.065),
         ("aipw", 0.3, 0.2, 0.064), ("dim", 0.05, 0.02, 0.01)]
    )  # fmt: skip
    (choice,) = choose(cands, 0.8)
    assert not choice.feasible and choice.row["estimator"] == "cuped"
    assert choice.near == ("dim at 0.3", "ipw at 0.3", "aipw at 0.3")  # 0.02 is beyond
    said = choice_sentence([choice], 0.8)
    assert (
        "cuped at 0.3; tied within 2 SE of the difference with dim at 0.3, ipw at 0.3 and 1 more"
        in said
    )
    cell = choice_table([choice], ["cuped", "dim"]).at[0, "estimator"]
    assert cell == "cuped (fixed-n); as powerful within 2 SE: 3 others"


def test_a_most_powerful_beyond_the_noise_of_the_rest_stands_alone():
    cands = _cands([("cuped", 0.3, 0.6, 0.01), ("dim", 0.3, 0.3, 0.01)])
    (choice,) = choose(cands, 0.8)
    assert choice.near == ()
    assert "(the most powerful: power 0.6 ± 0.01, cuped at 0.3)." in choice_sentence([choice], 0.8)
