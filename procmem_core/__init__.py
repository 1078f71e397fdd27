"""procmem's engine: procedural memory for LLM agents, numpy and scipy only.

Every public name is here (``from procmem_core import ProcedureStore, SPRTGate``); the
subpackages hold the design: ``flat`` (the notebook seed's confidence rule, prompt and
exact fate), ``graph`` (the loom seed's procedure graphs, ledger, evolve, store, packs),
``gates`` (revision gates and their exact operating points), ``quarantine`` (exit
policies for quarantined graph procedures and their exact chain; every name of its
``__all__`` is here), ``ab`` (withheld-vs-shown
estimators) and ``learn`` (learning from transcripts through an OpenAI-compatible model;
imported on first use, so ``import procmem_core`` does not load the ``openai`` client).
docs/architecture.md maps them.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

from procmem_core.ab import (
    ESTIMATORS,
    AugmentedIPW,
    BernsteinAIPW,
    BernsteinIPW,
    BetaMixtureArms,
    DifferenceInMeans,
    Estimate,
    HajekIPW,
    HorvitzThompsonIPW,
    LiftEstimator,
    NormalMixtureAIPW,
    NormalMixtureIPW,
    RegressionAdjusted,
    TwoPointAIPW,
)
from procmem_core.errors import ParameterError, ProcmemError
from procmem_core.explore import withhold_top
from procmem_core.flat import (
    BASE_PROMPT,
    DEFAULT_FILTER,
    DEFAULT_RULE,
    BaselineRule,
    ConfidenceRule,
    FlatFate,
    FlatPack,
    FlatRule,
    PosteriorRule,
    Procedure,
    PromptFilter,
    build_system_prompt,
    flat_fate,
    pack_flat,
    passes_threshold,
    prompt_order,
    shown_mask,
    snap,
)
from procmem_core.gates import (
    GATES,
    BatchDecision,
    CalibratedSPRTGate,
    CostGate,
    DiscordantSPRTGate,
    ErrorTargets,
    Gate,
    GateDecision,
    GateError,
    GateRecord,
    LatticeGate,
    MarginGate,
    MixtureEGate,
    OperatingPoint,
    RevisionStats,
    SPRTGate,
    TwoSampleGate,
    combine_gate_verdicts,
    make_gate,
    margin_operating_point,
    sprt_expected_runs_lower_bound,
    sprt_operating_point,
    wald_operating_point,
)
from procmem_core.graph import (
    SEED_EXAMPLE_GRAPH,
    ContextPacker,
    EvolveReport,
    GraphError,
    HashingEmbedder,
    LocateResult,
    Match,
    Pack,
    ProcedureGraph,
    ProcedureStore,
    RevisionError,
    RunRecord,
    StoredProcedure,
    UnknownProcedure,
)
from procmem_core.metric import Metric, metrics_of
from procmem_core.quarantine import *  # noqa: F403 (every name of quarantine.__all__)
from procmem_core.quarantine import __all__ as _QUARANTINE

_LAZY = {
    name: "procmem_core.learn"
    for name in (
        "EXTRACTION_PROMPT",
        "CallRecord",
        "ExtractionError",
        "LLMCallError",
        "LLMConfig",
        "LearnError",
        "LearnResult",
        "ReplyCache",
        "chat",
        "learn",
        "make_client",
        "to_candidates",
        "transcript_text",
    )
}
_LAZY["Agent"] = "procmem_core.agent"  # the async SDK facade (asyncio on first use)


def __getattr__(name: str) -> Any:
    """The ``learn`` names (they load the ``openai`` client) and ``Agent``, imported on
    first use."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'procmem_core' has no attribute {name!r}")
    return getattr(import_module(module), name)


__all__ = [
    "BASE_PROMPT",
    "DEFAULT_FILTER",
    "DEFAULT_RULE",
    "ESTIMATORS",
    "GATES",
    "SEED_EXAMPLE_GRAPH",
    "AugmentedIPW",
    "BatchDecision",
    "ConfidenceRule",
    "ContextPacker",
    "CostGate",
    "DifferenceInMeans",
    "ErrorTargets",
    "Estimate",
    "EvolveReport",
    "FlatFate",
    "FlatPack",
    "FlatRule",
    "Gate",
    "GateDecision",
    "GateError",
    "GateRecord",
    "GraphError",
    "HajekIPW",
    "HashingEmbedder",
    "HorvitzThompsonIPW",
    "LatticeGate",
    "LiftEstimator",
    "LocateResult",
    "MarginGate",
    "Match",
    "OperatingPoint",
    "Pack",
    "ParameterError",
    "ProcedureGraph",
    "ProcedureStore",
    "Procedure",
    "ProcmemError",
    "PromptFilter",
    "RevisionError",
    "RevisionStats",
    "RunRecord",
    "SPRTGate",
    "StoredProcedure",
    "UnknownProcedure",
    "build_system_prompt",
    "combine_gate_verdicts",
    "flat_fate",
    "make_gate",
    "margin_operating_point",
    "pack_flat",
    "passes_threshold",
    "prompt_order",
    "shown_mask",
    "snap",
    "sprt_expected_runs_lower_bound",
    "sprt_operating_point",
    "wald_operating_point",
    "withhold_top",
    "Metric",
    "metrics_of",
    "BernsteinAIPW",
    "BernsteinIPW",
    "BetaMixtureArms",
    "NormalMixtureAIPW",
    "NormalMixtureIPW",
    "RegressionAdjusted",
    "TwoPointAIPW",
    "CalibratedSPRTGate",
    "DiscordantSPRTGate",
    "MixtureEGate",
    "TwoSampleGate",
    "BaselineRule",
    "PosteriorRule",
    *_QUARANTINE,
    *_LAZY,
]
