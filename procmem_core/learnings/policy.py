"""A reviewer's bar: which candidates are ready for a person to look at.

Loom never promotes; a reviewer does, and a review policy is what a reviewer reads the
queue with: ``supporter_writers >= k`` (distinct principals: one multi-user writer is
one source) and/or ``supporter_count >= m`` (distinct end users, which one unpinned
token can inflate). A threshold of 0 is off; ``combine`` says whether both thresholds
that are on must hold (``and``) or either (``or``).
"""

from __future__ import annotations

from dataclasses import dataclass

from procmem_core.errors import ParameterError, check_choice, check_int
from procmem_core.learnings.records import Learning

COMBINE = ("and", "or")


@dataclass(frozen=True)
class ReviewPolicy:
    """Review a candidate once ``supporter_writers >= min_writers`` and/or
    ``supporter_count >= min_users`` (0 = that threshold is off)."""

    min_writers: int = 0
    min_users: int = 0
    combine: str = "and"

    def __post_init__(self) -> None:
        check_int("min_writers", self.min_writers, minimum=0)
        check_int("min_users", self.min_users, minimum=0)
        check_choice("combine", self.combine, COMBINE)
        if self.min_writers == 0 and self.min_users == 0:
            raise ParameterError("min_writers", 0, "at least one of min_writers and min_users >= 1")

    def admits(self, writers: int, users: int) -> bool:
        """Whether a candidate with these counts meets the bar."""
        tests = []
        if self.min_writers:
            tests.append(writers >= self.min_writers)
        if self.min_users:
            tests.append(users >= self.min_users)
        return all(tests) if self.combine == "and" else any(tests)

    def meets(self, learning: Learning) -> bool:
        return self.admits(learning.supporter_writers, learning.supporter_count)

    def describe(self) -> str:
        parts = []
        if self.min_writers:
            parts.append(f"supporter_writers >= {self.min_writers}")
        if self.min_users:
            parts.append(f"supporter_count >= {self.min_users}")
        return f" {self.combine} ".join(parts)
