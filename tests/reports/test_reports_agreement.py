"""The simulated-vs-exact table (reports.summary): z by the SE, and a figure without
sampling noise (SE 0) compared up to float rounding, not by ``==``."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pandas as pd

from reports.summary import agreement_section, agreement_table


def _sweep(rows: list[dict]) -> SimpleNamespace:
    runs = pd.DataFrame(rows)
    names = tuple(c for c in runs.columns if c not in ("scenario", "run_id", "run_name"))
    return SimpleNamespace(runs=runs, metric_names=names)


def test_z_is_the_difference_over_the_se():
    sweep = _sweep(
        [
            {
                "scenario": "gate",
                "run_id": "a",
                "run_name": "a",
                "rate": 0.163,
                "rate_se": 0.0026,
                "rate_exact": 0.1613,
            }
        ]
    )
    t = agreement_table(sweep)
    assert t["z"].tolist() == [(0.163 - 0.1613) / 0.0026]


def test_a_noiseless_figure_agrees_up_to_rounding_and_not_beyond():
    """Every replication decides at run 40: the mean is 40 with SE 0 and the lattice's
    exact E[runs] is 40 up to summation rounding (1e-13 off); 40.5 is a real disagreement."""
    exact = sum([0.1] * 400)  # 40.00000000000..., not == 40.0
    assert exact != 40.0
    sweep = _sweep(
        [
            {
                "scenario": "gate",
                "run_id": "a",
                "run_name": "a",
                "runs": 40.0,
                "runs_se": 0.0,
                "runs_exact": exact,
            },
            {
                "scenario": "gate",
                "run_id": "b",
                "run_name": "b",
                "runs": 40.5,
                "runs_se": 0.0,
                "runs_exact": exact,
            },
        ]
    )
    t = agreement_table(sweep)
    assert t["z"].tolist() == [0.0, np.inf]
    answer = agreement_section(sweep).said
    assert answer.startswith("No: 1 of 2 simulated figures")
