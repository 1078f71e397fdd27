"""The gate the design tool prescribes for a design question, as a gate to run.

``prescribed_gate(alpha=..., beta=..., min_drop=..., ledger=..., concurrent=..., ...)``
asks ``design_gate(DesignQuestion(...))`` (``gates.design``: every family's exact answer)
and builds its pick, ``GateDesign.chosen`` (the feasible answer the objective prefers,
the one ``python -m experiments.design gate`` says to use), with ``make_gate``. Change a
target and the gate changes with it. The answer is cached per question in the process and
in ``calibration_store.current()`` (keyed by the whole question and the code's hash; a
file shared by a sweep's jobs when the experiments layer installs one), as a question
takes seconds.

A question no family can answer (no concurrent control and a ledger too short to support
the targets, or too small a ``max_runs``) is refused naming the key to change, with the
design tool's note on what would be feasible instead.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from procmem_core.errors import ParameterError, is_number
from procmem_core.gates.base import Gate
from procmem_core.gates.calibration_store import stored
from procmem_core.gates.design import FamilyAnswer, design_gate
from procmem_core.gates.question import DesignQuestion
from procmem_core.gates.registry import make_gate

PRESCRIBED = "prescribed"
"""The name a config gives the prescribed gate (``conf/gate/prescribed.yaml``)."""


@lru_cache(maxsize=32)
@stored("prescribed.prescribed_answer")
def prescribed_answer(question: DesignQuestion) -> FamilyAnswer:
    """The design tool's pick for ``question`` (``GateDesign.chosen``); a
    ``ParameterError`` naming ``concurrent`` (without concurrent control) or ``max_runs``
    (with it) when no family meets both targets, with each family's note."""
    design = design_gate(question)
    if design.chosen is not None:
        return design.chosen
    notes = "; ".join(f"{a.family} ({a.design}): {a.note}" for a in design.answers if a.note)
    targets = (
        f"no gate family meets false revert <= {question.alpha:g} and power >= "
        f"{1 - question.beta:g} against a drop of {question.min_drop:g} over p0 in "
        f"[{question.p0_low:g}, {question.p0_high:g}] with a {question.ledger}-run ledger "
        f"within max_runs={question.max_runs}"
    )
    if question.concurrent == 0:
        raise ParameterError("concurrent", 0.0, f"> 0 (concurrent control): {targets}; {notes}")
    raise ParameterError("max_runs", question.max_runs, f"larger: {targets}; {notes}")


def prescribed_gate(name: str = PRESCRIBED, **question: Any) -> Gate:
    """The gate ``design_gate`` picks for ``DesignQuestion(**question)`` (module
    docstring); ``name`` must be ``"prescribed"``. Bad fields raise ``ParameterError``
    naming them (the question's own checks)."""
    if name != PRESCRIBED:
        raise ParameterError("name", name, f"{PRESCRIBED!r}")
    if "ledger_sizes" in question:  # the question's list, from a config, as its tuple
        question["ledger_sizes"] = tuple(question["ledger_sizes"] or ())
    try:
        asked = DesignQuestion(**question)
    except ParameterError as exc:
        if exc.field != "p0_range":
            raise
        raise _range_error(question, exc.allowed) from None
    return make_gate(**prescribed_answer(asked).config)


def _range_error(question: dict[str, Any], allowed: str) -> ParameterError:
    """The p0 range's error named by the key a config sets (``p0_high`` when it is the
    one outside (0, 1), else ``p0_low``)."""
    low, high = question.get("p0_low"), question.get("p0_high")
    high_bad = not (is_number(high) and 0 < high < 1)
    field, value = ("p0_high", high) if high_bad else ("p0_low", low)
    return ParameterError(field, value, f"{allowed} (p0_low={low}, p0_high={high})")


__all__ = ["PRESCRIBED", "prescribed_answer", "prescribed_gate"]
