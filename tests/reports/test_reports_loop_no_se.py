"""The loop section where a figure has no standard error (one replication, or none
logged): no sentence or table may read the missing SE as 0 (an exact value) or print
an interval of NaN. Hidden cases of issue 29's verdict, its informative-missingness
comparison and its main effects."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from reports.sections.loop_evidence import Verdict, main_effects
from reports.sections.loop_missing import missing_sentence, missing_table


def _row(run_id: str, limit: int, change: float, se: float, informative: bool) -> pd.Series:
    row = {
        "run_id": run_id,
        "config": f"strike limit {limit}; " + ("informative" if informative else "perfect"),
        "params.scenario.strike_limit": limit,
        "params.scenario.replications": 1 if math.isnan(se) else 10,
        "regret_change": change,
        "regret_change_se": se,
        "regret": 0.1,
        "regret_se": se,
    }
    if informative:
        row["params.feedback.informative_missing.missing_if_success"] = 0.5
        row["params.feedback.informative_missing.missing_if_failure"] = 0.1
    return pd.Series(row)


def test_a_difference_without_a_standard_error_is_not_said_to_be_within_the_noise():
    """One replication: the old sentence said "the difference 0.186 is within 2 SE of the
    difference" (NaN compared False), a claim with no SE behind it."""
    a, b = _row("a", 3, -0.139, np.nan, False), _row("b", 3, 0.0468, np.nan, True)
    said = missing_sentence([(a, b)], a, 1)
    assert "within 2 SE" not in said and "beyond 2 SE" not in said
    assert "the difference 0.186 has no standard error" in said
    # with SEs the comparison is made as before
    a, b = _row("a", 3, -0.139, 0.02, False), _row("b", 3, 0.0468, 0.03, True)
    assert "is beyond 2 SE of the difference" in missing_sentence([(a, b)], a, 1)


def test_a_verdict_without_an_interval_prints_no_nan():
    """The old describe() gave "(95 % interval [+nan, +nan], 1 replications)"."""
    text = Verdict(-0.139, math.nan, 1).describe()
    assert "nan" not in text
    assert text == "regret change -0.139 (no interval: no standard error, 1 replication)"
    a, b = _row("a", 3, -0.139, np.nan, False), _row("b", 3, 0.0468, np.nan, True)
    table = missing_table([(a, b)], 1).frame
    assert not table.astype(str).apply(lambda c: c.str.contains("nan")).any().any()
    assert Verdict(-0.1, 0.02, 10).describe().endswith("10 replications)")


def test_a_main_effect_over_rows_without_a_standard_error_has_none():
    """pandas' sum skips NaN, so the old SE of a mean over rows of one replication was
    sqrt(0) = 0 and the table read "(the same in every replication)"."""
    rows = pd.DataFrame([_row("a", 3, -0.139, np.nan, False), _row("b", 0, -0.039, np.nan, False)])
    effects = main_effects(rows, ("regret_change",))
    assert effects["regret_change_se"].isna().all()
    assert not effects["regret change"].str.contains("the same in every").any()
    mixed = pd.DataFrame(
        [_row("a", 3, -0.1, 0.02, False), _row("b", 3, -0.2, np.nan, False),
         _row("c", 0, 0.0, 0.01, False)]
    )  # fmt: skip
    effects = main_effects(mixed, ("regret_change",)).set_index("value")
    assert math.isnan(effects.loc["3", "regret_change_se"])
    assert effects.loc["0", "regret_change_se"] == 0.01
