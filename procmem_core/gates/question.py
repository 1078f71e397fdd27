"""The gate design question: the targets and the evidence available (``design_gate``
answers it; the scans and ledger bounds read it)."""

from __future__ import annotations

from dataclasses import dataclass

from procmem_core.errors import check_probability
from procmem_core.gates.defaults import ALPHA, BETA, LEDGER, MIN_DROP, MIN_RUNS, P0_HIGH
from procmem_core.gates.early_stop import Objective
from procmem_core.gates.lattice import check_ledger_size
from procmem_core.gates.ledger_profile import check_ledger_sizes
from procmem_core.gates.targets import ErrorTargets, check_fields
from procmem_core.gates.twolattice import check_observations
from procmem_core.gates.worst import P0Range


@dataclass(frozen=True)
class DesignQuestion:
    """Targets and the evidence available. ``concurrent``: the share q of sessions that
    serve the prior while a revision is pending (0: the fixed-ledger design)."""

    alpha: float = ALPHA
    beta: float = BETA
    min_drop: float = MIN_DROP
    ledger: int = LEDGER
    concurrent: float = 0.0
    p0_low: float = 0.3
    p0_high: float = P0_HIGH
    min_runs: int = MIN_RUNS
    max_runs: int = 200
    objective: str = "null_runs"
    weight: float = 1.0
    """The ``mixed`` objective's weight on expected pairs when nothing changed."""
    ledger_sizes: tuple[int, ...] = ()
    """Ledger sizes at which to show the answer's guarantee (``ledger_profile``; the gate
    recalibrates for the ledger it sees); empty: not asked."""

    def __post_init__(self) -> None:
        check_fields(self)
        rng = P0Range(self.p0_low, self.p0_high)
        rng.check_drop(self.min_drop)
        check_ledger_size("ledger", self.ledger, self.max_runs)
        check_probability("concurrent", self.concurrent, open_high=True)
        Objective(self.objective, self.weight)
        if self.ledger_sizes != ():
            sizes = check_ledger_sizes(self.ledger_sizes)
            check_ledger_size("ledger_sizes", sizes[-1], self.max_runs)
            object.__setattr__(self, "ledger_sizes", sizes)
        self._check_observations()

    def _check_observations(self) -> None:
        """The two-sample families (both designs are answered, whatever ``concurrent``) take
        ``ledger + 2 max_runs`` outcomes at most ``twolattice.MAX_OBSERVATIONS``: refused
        here, naming the field, not after seconds of the other families' search."""
        check_observations(self.ledger, self.max_runs, 2)

    @property
    def targets(self) -> ErrorTargets:
        """The question's ``ErrorTargets(alpha, beta, min_drop)``, the gates' own type."""
        return ErrorTargets(self.alpha, self.beta, self.min_drop)

    @property
    def p0_range(self) -> P0Range:
        return P0Range(self.p0_low, self.p0_high)

    @property
    def goal(self) -> Objective:
        return Objective(self.objective, self.weight)
