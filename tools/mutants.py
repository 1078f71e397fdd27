"""Mutation check: plant one small, plausible bug at a time and see whether the tests notice.

Each mutant is a named text edit of one engine file (every ``old`` must occur exactly
once there) and the test files that should catch it. The tree is copied once to a
temporary folder (without ``.git``, ``.venv`` and outputs); there each mutant is applied,
its test files run (``python -m pytest -x``, bytecode off so no stale ``.pyc`` hides the
edit), and the file restored. A mutant is *killed* when pytest reports a failure (exit 1)
or hits its time limit, *survived* when its tests pass, an *error* when pytest could not
run them (exit 2-5). The unmutated copy runs every listed test file first; if that fails,
nothing is counted.

Two kinds are listed but not run: *equivalent* mutants, which cannot change behaviour
(each with the reason), and *pending* ones, whose target arrives with another branch's
merge (their file is absent here; once it exists they run like the others, and a target
string that is missing then is an error, not a silent skip).

``python tools/mutants.py [--only NAME,...] [--jobs N] [--list] [--root DIR]``; the last line
is one JSON object: counts, the survivors, the errors and every mutant's status.
``make mutants`` runs it (not part of ``make test``: it takes several minutes).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from mutant_catalog import MUTANTS, Mutant

ROOT = Path(__file__).resolve().parents[1]
SKIP = {".git", ".venv", "outputs", "multirun", "mlruns", "mlartifacts", ".hypothesis"}
SKIP_SUFFIXES = (".egg-info", "_cache", "__pycache__")
RUN_LIMIT = 900  # seconds per mutant's test run; a mutant that hangs the tests is killed


def copy_tree(root: Path, dest: Path) -> Path:
    """The working tree (uncommitted edits included) without VCS, venvs and outputs."""

    def ignore(folder: str, names: list[str]) -> set[str]:
        rel = Path(folder).relative_to(root)
        out = {n for n in names if n in SKIP or n.endswith(SKIP_SUFFIXES)}
        if rel == Path("reports"):
            out.add("out")
        return out | {n for n in names if n.startswith("mlflow.db")}

    shutil.copytree(root, dest, ignore=ignore)
    return dest


def run_tests(tree: Path, tests: tuple[str, ...]) -> tuple[int, float, str]:
    """``(pytest exit code or -1 on the time limit, seconds, last lines of output)``."""
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    cmd = [sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", *tests]
    start = time.monotonic()
    try:
        done = subprocess.run(
            cmd, cwd=tree, env=env, capture_output=True, text=True, timeout=RUN_LIMIT
        )
    except subprocess.TimeoutExpired:
        return -1, time.monotonic() - start, "time limit"
    lines = (done.stdout + done.stderr).strip().splitlines()
    failed = [x.split(" - ")[0] for x in lines if x.startswith(("FAILED ", "ERROR "))]
    tail = "\n".join(failed[:1] + lines[-3:])
    return done.returncode, time.monotonic() - start, tail


def check_targets(mutant: Mutant, tree: Path) -> str | None:
    """None when every edit applies exactly once; else why not."""
    path = tree / mutant.file
    if not path.exists():
        return f"{mutant.file} does not exist"
    text = path.read_text()
    for old, _ in mutant.edits:
        if text.count(old) != 1:
            return f"{old!r} occurs {text.count(old)} times in {mutant.file}"
    missing = [t for t in mutant.tests if not (tree / t).exists()]
    return f"missing test files {missing}" if missing else None


def run_mutant(mutant: Mutant, tree: Path) -> dict:
    path = tree / mutant.file
    original = path.read_text()
    text = original
    for old, new in mutant.edits:
        text = text.replace(old, new)
    path.write_text(text)
    try:
        code, seconds, tail = run_tests(tree, mutant.tests)
    finally:
        path.write_text(original)
    status = {0: "survived", 1: "killed", -1: "killed"}.get(code, "error")
    first = tail.splitlines()[0] if tail else ""
    return {"name": mutant.name, "status": status, "exit": code, "seconds": round(seconds, 1),
            "detail": first.removeprefix("FAILED ").removeprefix("ERROR ")}  # fmt: skip


def classify(mutants: tuple[Mutant, ...], tree: Path) -> tuple[list, list, list, list]:
    """``(to run, equivalent, pending, errors)``."""
    runnable, equivalent, pending, errors = [], [], [], []
    for m in mutants:
        if m.equivalent:
            equivalent.append({"name": m.name, "reason": m.equivalent})
            continue
        if m.pending and not (tree / m.file).exists():
            pending.append({"name": m.name, "branch": m.pending, "file": m.file})
            continue
        problem = check_targets(m, tree)
        if problem:
            errors.append({"name": m.name, "status": "error", "detail": problem})
        else:
            runnable.append(m)
    return runnable, equivalent, pending, errors


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="", help="comma-separated mutant names")
    parser.add_argument("--jobs", type=int, default=1, help="mutants run side by side")
    parser.add_argument("--list", action="store_true", help="list the mutants and stop")
    parser.add_argument("--root", type=Path, default=ROOT, help="the tree to copy (this repo)")
    args = parser.parse_args(argv)
    chosen = _chosen(parser, args.only)
    if args.list:
        for m in chosen:
            tag = (
                " (equivalent)" if m.equivalent else f" (pending {m.pending})" if m.pending else ""
            )
            print(f"{m.name}{tag}: {m.bug} [{m.file}]")
        return 0
    with tempfile.TemporaryDirectory(prefix="procmem-mutants-") as tmp:
        trees = [copy_tree(args.root, Path(tmp) / f"tree{i}") for i in range(max(1, args.jobs))]
        runnable, equivalent, pending, errors = classify(chosen, trees[0])
        files = tuple(dict.fromkeys(t for m in runnable for t in m.tests))
        code, seconds, tail = run_tests(trees[0], files)
        if code != 0:
            print(f"baseline: the unmutated tests fail (exit {code}):\n{tail}")
            print(json.dumps({"baseline": "failed", "exit": code}))
            return 2
        print(f"baseline: {len(files)} test files pass unmutated ({seconds:.0f} s)", flush=True)
        results = run_all(runnable, trees)
    return _report(results + errors, equivalent, pending)


def _chosen(parser: argparse.ArgumentParser, only: str) -> tuple[Mutant, ...]:
    """The mutants ``--only`` names (every one when empty); an unknown name is an error."""
    if not only:
        return MUTANTS
    names = set(only.split(","))
    unknown = names - {m.name for m in MUTANTS}
    if unknown:
        parser.error(f"unknown mutants: {sorted(unknown)}")
    return tuple(m for m in MUTANTS if m.name in names)


def _report(results: list[dict], equivalent: list[dict], pending: list[dict]) -> int:
    """Print each mutant's outcome and the JSON summary; 1 when any survived or errored."""
    for r in results:
        print(f"{r['status']:9s} {r['name']}: {r['detail']}")
    for e in equivalent:
        print(f"equivalent {e['name']}: {e['reason']}")
    for p in pending:
        print(f"pending   {p['name']}: {p['file']} arrives with {p['branch']}")
    survived = [r["name"] for r in results if r["status"] == "survived"]
    failed = [r["name"] for r in results if r["status"] == "error"]
    summary = {
        "mutants": len(results),
        "killed": sum(r["status"] == "killed" for r in results),
        "survived": survived,
        "errors": failed,
        "equivalent": [e["name"] for e in equivalent],
        "pending": [p["name"] for p in pending],
        "status": {r["name"]: r["status"] for r in results},
    }
    print(json.dumps(summary))
    return 1 if survived or failed else 0


def run_all(runnable: list[Mutant], trees: list[Path]) -> list[dict]:
    """Each tree runs its share of the mutants in turn (one mutant per tree at a time)."""
    shares = [runnable[i :: len(trees)] for i in range(len(trees))]

    def work(i: int) -> list[dict]:
        out = []
        for m in shares[i]:
            out.append(run_mutant(m, trees[i]))
            print(f"  {out[-1]['status']:9s} {m.name} ({out[-1]['seconds']} s)", flush=True)
        return out

    with ThreadPoolExecutor(len(trees)) as pool:
        parts = list(pool.map(work, range(len(trees))))
    order = {m.name: i for i, m in enumerate(runnable)}
    return sorted((r for p in parts for r in p), key=lambda r: order[r["name"]])


if __name__ == "__main__":
    sys.exit(main())
