"""Revision gates (seed: loom-procedures.txt, "Revisions are gated").

One base (``Gate``; ``LatticeGate`` for gates on the (runs, successes) lattice), the
verdicts and reasons every gate answers in, the lattice machinery, the seed's SPRT,
margin and cost gates, how a gate and a veto decide together, and the registry
(``GATES``, ``make_gate``). Gates that hold their error rates when p0 is unknown: the
calibrated SPRT, the exact two-sample test (fixed or concurrent design), the
discordant-pairs SPRT and the anytime-valid mixture gate; their worst case over the
nuisance (``worst_case``) and the design question (``design_gate``). docs/gates.md.
"""

from procmem_core.gates.base import (
    DESIGNS,
    GATES,
    Gate,
    GateError,
    OperatingCurve,
    OperatingPoint,
)
from procmem_core.gates.calibrated_sprt import CalibratedSPRTGate
from procmem_core.gates.combine import combine_gate_verdicts, decide_together
from procmem_core.gates.cost import CostGate
from procmem_core.gates.design import (
    DesignQuestion,
    FamilyAnswer,
    GateDesign,
    design_gate,
    ledger_power_bound,
)
from procmem_core.gates.discordant import DiscordantSPRTGate
from procmem_core.gates.eprocess import MixtureEGate
from procmem_core.gates.lattice_gate import LatticeGate
from procmem_core.gates.ledger_profile import LEDGER_SIZES, LedgerRow, ledger_profile
from procmem_core.gates.llr import bernoulli_kl, wald_wolfowitz_bound
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
from procmem_core.gates.targets import ErrorTargets
from procmem_core.gates.two_sample import TwoSampleGate
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
    Evidence,
    GateDecision,
    RevisionStats,
    verdict_names,
)
from procmem_core.gates.worst import P0Range, WorstCase, worst_case

__all__ = [
    "ACCEPT",
    "ACCEPT_CODE",
    "CONTINUE",
    "CONTINUE_CODE",
    "DECISION_COLUMNS",
    "DESIGNS",
    "GATES",
    "LEDGER_SIZES",
    "REASONS",
    "REVERT",
    "REVERT_CODE",
    "VERDICT_CODES",
    "VERDICT_NAMES",
    "BatchDecision",
    "CalibratedSPRTGate",
    "CostGate",
    "DesignQuestion",
    "DiscordantSPRTGate",
    "ErrorTargets",
    "Evidence",
    "FamilyAnswer",
    "Gate",
    "GateDecision",
    "GateDesign",
    "GateError",
    "GateRecord",
    "LatticeGate",
    "LedgerRow",
    "MarginGate",
    "MixtureEGate",
    "OperatingCurve",
    "OperatingPoint",
    "P0Range",
    "RevisionStats",
    "SPRTGate",
    "TwoSampleGate",
    "WorstCase",
    "bernoulli_kl",
    "combine_gate_verdicts",
    "decide_together",
    "design_gate",
    "ledger_power_bound",
    "ledger_profile",
    "make_gate",
    "margin_operating_point",
    "sprt_expected_runs_lower_bound",
    "sprt_operating_point",
    "verdict_names",
    "wald_operating_point",
    "wald_wolfowitz_bound",
    "worst_case",
]
