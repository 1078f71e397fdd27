"""Errors the report builder raises: each says what was asked for and what exists."""

from __future__ import annotations

from procmem_core.errors import ProcmemError


class ReportError(ProcmemError):
    """The report cannot be built from what was given (missing runs, columns or files)."""


class NoSweepError(ReportError):
    """The experiment, or the requested parent run, does not exist or has no runs."""
