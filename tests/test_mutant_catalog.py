"""The mutation catalog stays runnable (issue 19, item 6): every mutant's edit applies exactly
once to today's tree and names test files that exist, so a refactor that moves a rule fails
here, in ``make test``, instead of turning a mutant into an uncounted error of
``make mutants``. Whether each mutant is killed is ``make mutants``' job (minutes)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))

from mutant_catalog import MUTANTS  # noqa: E402
from mutants import check_targets  # noqa: E402

ISSUE_TABLE = (
    "flat_clamp_ignores_floor_ceiling",
    "flat_reward_times_1.1",
    "sprt_ln_a_is_ln_one_over_alpha",
    "sprt_cap_overrides_a_boundary",
    "template_while_revision_pending",
    "hajek_se_without_1_over_m",
)
"""Issue 19's table of planted bugs that survived, in the catalog's names."""


def _runnable():
    """The mutants ``make mutants`` runs: not equivalent, and not pending a missing file."""
    waiting = {m.name for m in MUTANTS if m.pending and not (ROOT / m.file).exists()}
    return [m for m in MUTANTS if not m.equivalent and m.name not in waiting]


@pytest.mark.parametrize("mutant", _runnable(), ids=lambda m: m.name)
def test_every_mutant_applies_once_to_todays_tree(mutant):
    assert check_targets(mutant, ROOT) is None
    assert mutant.tests and mutant.bug


def test_the_catalog_holds_the_issue_table_and_at_least_twenty_mutants():
    names = [m.name for m in MUTANTS]
    assert len(set(names)) == len(names)
    assert set(ISSUE_TABLE) <= set(names)
    assert not any(m.equivalent for m in MUTANTS if m.name in ISSUE_TABLE)
    assert len(_runnable()) >= 20


def test_an_equivalent_mutant_states_why():
    for m in MUTANTS:
        if m.equivalent:
            assert len(m.equivalent.split()) >= 5, m.name
