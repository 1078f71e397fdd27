"""A former commit beside this checkout in one benchmark run: the shared helper of the
benchmarks that measure a speed-up side by side (``bench_simulators``' loop,
``bench_gates``' design questions, ``bench_flat_design``'s flat design questions).

``baseline_tree(commit)`` checks ``commit`` out into a temporary detached git worktree
(``git worktree add --detach``) and removes it afterwards, whatever happens (try/finally);
it yields None when the commit cannot be checked out (no git, a shallow clone), so the
benchmark reports NaN for the baseline instead of failing. ``run_json(root, code, args)``
runs ``code`` in a fresh interpreter (this one's executable) with the packages of
checkout ``root`` first on the path (``PYTHONPATH`` and the working directory) and returns
the JSON object it prints last: the same code, measured on both trees in turn.
``cpu_model()`` names the processor the ratio was measured on: a ratio to the baseline
moves with the CPU (the loop's was 7.9-8.8 on one machine and 5.6-5.8 on an AMD EPYC
with AVX-512, where the baseline's numpy-heavy code ran about 1.6 times as fast and this
checkout's 1.06 to 1.14 times).
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
"""This checkout."""
ONE_CORE = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
"""Environment of a subprocess measured on one core (BLAS would otherwise add threads)."""


@contextmanager
def baseline_tree(commit: str) -> Iterator[Path | None]:
    """A temporary worktree of ``commit`` (None if it cannot be checked out), removed after."""
    with tempfile.TemporaryDirectory(prefix="procmem-baseline-") as tmp:
        tree = Path(tmp) / "tree"
        try:
            added = subprocess.run(
                ["git", "-C", str(ROOT), "worktree", "add", "--detach", str(tree), commit],
                capture_output=True, text=True,
            )  # fmt: skip
        except OSError as err:  # no git
            print(f"baseline {commit} not checked out: {err}")
            yield None
            return
        if added.returncode != 0:
            print(f"baseline {commit} not checked out: {added.stderr.strip()}")
            yield None
            return
        try:
            yield tree
        finally:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(tree)],
                           capture_output=True)  # fmt: skip


def cpu_model() -> str:
    """The processor's model name (``/proc/cpuinfo``'s first ``model name``, else
    ``platform.processor()``, else ``"unknown CPU"``), with the core count."""
    name = ""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            name = next((line.split(":", 1)[1].strip() for line in f
                         if line.startswith("model name")), "")  # fmt: skip
    except OSError:
        pass
    name = name or platform.processor() or "unknown CPU"
    return f"{name}, {os.cpu_count()} cores"


def run_json(root: Path, code: str, args: list[str], env: dict[str, str] | None = None) -> dict:
    """The JSON object printed last by ``python -c code *args`` run in a fresh interpreter
    with checkout ``root``'s packages (``PYTHONPATH=root``, cwd ``root``); ``env`` is added
    to the environment."""
    full = {**os.environ, **(env or {}), "PYTHONPATH": str(root)}
    cmd = [sys.executable, "-c", code, *args]
    out = subprocess.run(cmd, cwd=root, env=full, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])
