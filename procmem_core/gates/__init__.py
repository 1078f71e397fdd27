"""Revision gates (seed: loom-procedures.txt, "Revisions are gated").

One base (``Gate``; ``LatticeGate`` for gates on the (runs, successes) lattice), the
verdicts and reasons every gate answers in, the lattice machinery, the seed's SPRT,
margin and cost gates, how a gate and a veto decide together, and the registry
(``GATES``, ``make_gate``). docs/gates.md.
"""

from procmem_core.gates.base import (
    GATES,
    Gate,
    GateError,
    LatticeGate,
    OperatingPoint,
    bernoulli_kl,
    wald_wolfowitz_bound,
)
from procmem_core.gates.combine import combine_gate_verdicts, decide_together
from procmem_core.gates.cost import CostGate
from procmem_core.gates.margin import MarginGate
from procmem_core.gates.operating import (
    margin_operating_point,
    sprt_expected_runs_lower_bound,
    sprt_operating_point,
    wald_operating_point,
)
from procmem_core.gates.records import DECISION_COLUMNS, GateRecord
from procmem_core.gates.registry import make_gate
from procmem_core.gates.sprt import SPRTGate
from procmem_core.gates.verdicts import (
    ACCEPT,
    ACCEPT_CODE,
    CONTINUE,
    CONTINUE_CODE,
    REASONS,
    REVERT,
    REVERT_CODE,
    VERDICT_CODES,
    VERDICT_NAMES,
    BatchDecision,
    GateDecision,
    RevisionStats,
    verdict_names,
)

__all__ = [
    "ACCEPT",
    "ACCEPT_CODE",
    "CONTINUE",
    "CONTINUE_CODE",
    "DECISION_COLUMNS",
    "GATES",
    "REASONS",
    "REVERT",
    "REVERT_CODE",
    "VERDICT_CODES",
    "VERDICT_NAMES",
    "BatchDecision",
    "CostGate",
    "Gate",
    "GateDecision",
    "GateError",
    "GateRecord",
    "LatticeGate",
    "MarginGate",
    "OperatingPoint",
    "RevisionStats",
    "SPRTGate",
    "bernoulli_kl",
    "combine_gate_verdicts",
    "decide_together",
    "make_gate",
    "margin_operating_point",
    "sprt_expected_runs_lower_bound",
    "sprt_operating_point",
    "verdict_names",
    "wald_operating_point",
    "wald_wolfowitz_bound",
]
