"""The lift section's sentences give the numbers the user asked for, not rounded ones:
``--level 0.975`` read 'fixed-n 98%' and 'effects at Holm 0.03' (the level used is
0.025), ``--level 0.999`` 'fixed-n 100%' and 'Holm 0.00'; a planner's target lift of
0.125 read '+0.12'. Each case failed before the fix."""

from __future__ import annotations

import numpy as np
import pytest

from experiments.analyze.report import lift_section
from procmem_core.logs import Table, Text, check_log, estimate_lifts


def _sessions(withheld: list[bool]) -> Table:
    n = len(withheld)
    return Table("sessions", "sessions.csv", n, {
        "session_id": Text(np.arange(n), np.arange(n).astype(str)),
        "time": np.arange(n, dtype=float),
        "top_key": Text(np.zeros(n, dtype=np.int64), np.array(["p"], dtype=object)),
        "withheld": np.array(withheld),
        "explore_rate": np.full(n, 0.2),
        "outcome": (np.arange(n) % 2).astype(float),
    })  # fmt: skip


@pytest.mark.parametrize(
    "level, interval, holm",
    [(0.975, "fixed-n 97.5%", "at Holm 0.025."), (0.999, "fixed-n 99.9%", "at Holm 0.001."),
     (0.95, "fixed-n 95%", "at Holm 0.05.")],
)  # fmt: skip
def test_the_level_is_said_as_given(level, interval, holm):
    s = check_log(_sessions([False, True] * 10)).sessions
    text, _ = lift_section(estimate_lifts(s, level=level), level)
    assert interval in text and holm in text


def test_the_planners_target_lift_is_said_as_given():
    s = check_log(_sessions([False] * 10)).sessions
    text, _ = lift_section(estimate_lifts(s, target_lift=0.125), 0.95)
    assert "detect a lift of +0.125 on" in text
