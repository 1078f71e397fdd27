"""Quarantine exit policies and their exact chain (issue 29; docs/graph.md, "Quarantine").

``QuarantinePolicy`` and its registry ``QUARANTINE_POLICIES`` (``seed``, ``probation``,
``half_open``, ``decay``, one module each), the pack's additive floor
(``select.serve_order``) and ``quarantine_fate`` (``fate``)."""

from procmem_core.quarantine.base import (
    QUARANTINE_POLICIES,
    ExitChain,
    QuarantinePolicy,
    make_quarantine_policy,
)
from procmem_core.quarantine.decay import DecayPolicy
from procmem_core.quarantine.fate import ExitFate, QuarantineFate, quarantine_fate
from procmem_core.quarantine.half_open import HalfOpenPolicy
from procmem_core.quarantine.probation import ProbationPolicy
from procmem_core.quarantine.seed import SeedPolicy

__all__ = [
    "QUARANTINE_POLICIES",
    "DecayPolicy",
    "ExitChain",
    "ExitFate",
    "HalfOpenPolicy",
    "ProbationPolicy",
    "QuarantineFate",
    "QuarantinePolicy",
    "SeedPolicy",
    "make_quarantine_policy",
    "quarantine_fate",
]
