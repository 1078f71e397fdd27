"""Words the report writes about its runs, on hand-made rows: each says what was run."""

from __future__ import annotations

from types import SimpleNamespace

import pandas as pd

from reports.sections.confidence_runs import _world_words


def test_a_noisy_world_names_each_feedback_setting():
    """The quickstart's world B (delay 2, flips 0.1/0.05, missing 0.3) read "noisy judge",
    which hides that ratings also arrive late and go missing."""
    names = (
        "params.scenario.procedures",
        "params.scenario.sessions",
        "params.feedback.delay.delay",
        "params.feedback.flips.false_negative",
        "params.feedback.flips.false_positive",
        "params.feedback.missing.missing",
    )
    sweep = SimpleNamespace(param_names=names)
    noisy = pd.Series(dict(zip(names, [8, 40, 2.0, 0.1, 0.05, 0.3], strict=True)))
    assert _world_words(sweep, noisy) == (
        "8 procedures, feedback: delay 2, false negative 0.1, false positive 0.05, "
        "missing 0.3, 40 sessions"
    )
    clean = pd.Series(dict(zip(names, [8, 40, None, None, None, None], strict=True)))
    assert _world_words(sweep, clean) == "8 procedures, perfect feedback, 40 sessions"


def test_a_condition_names_every_feedback_setting_it_sweeps_together():
    """The loop preset sweeps flips and missing ratings together: its condition read
    "missing 0.3" / "missing none" (the other two were dropped as implied by it)."""
    from reports.configs import _without_redundant, label

    cols = [
        "params.scenario.strike_limit",
        "params.feedback.flips.false_negative",
        "params.feedback.flips.false_positive",
        "params.feedback.missing.missing",
    ]
    runs = pd.DataFrame(
        [[3, 0.1, 0.05, 0.3], [3, None, None, None], [0, 0.1, 0.05, 0.3], [0, None, None, None]],
        columns=cols,
    )
    kept = _without_redundant(runs, [], cols, text_first=True)
    assert kept == cols
    words = [label(r, kept, "as configured") for _, r in runs.iterrows()]
    assert words[0] == "strike limit 3, false negative 0.1, false positive 0.05, missing 0.3"
    assert words[1] == "strike limit 3, perfect feedback"
