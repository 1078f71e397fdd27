"""What every report says about where its numbers come from, in the frame, not in sections.

- ``provenance_section``: the sweep reported and why it was chosen, when it ran, the
  exact command, the code's commit, the package versions of the jobs and of the report,
  and per scenario the runs, replications and seeds;
- ``caption_runs``: appended to every figure's and table's caption, the replications and
  seeds of the runs behind that section;
- ``define_terms``: each term of ``GLOSSARY`` defined in the section where it is first
  used (its answer, text, captions or table columns): on the main page when the main
  page uses it, else on the appendix page beside the moved blocks that do.
"""

from __future__ import annotations

import re
from dataclasses import replace
from datetime import UTC, datetime

import pandas as pd

from reports.document import Detail, Figure, Preformatted, Section, Table, is_detail
from reports.source import Sweep

GLOSSARY: dict[str, str] = {
    "SE": "Monte Carlo standard error: the spread of a simulated figure over repeated "
    "simulations, sqrt(r (1 - r) / R) for a rate r over R replications",
    "exact": "computed without sampling (a recursion over every reachable state), so it has no SE",
    "replication": "one independent simulated world (one deployment) drawn from the job's "
    "seed; rates are averaged over replications",
    "condition": "a swept setting that is not part of the component being tuned (ledger "
    "size, user heterogeneity, feedback noise, true lift); a configuration is judged in "
    "each condition it ran in",
    "configuration": "one setting of the component being tuned (a gate's or a rule's "
    "swept parameters)",
    "false revert": "the gate reverts a revision that is no worse than the prior (true "
    "drop 0): the error of the first kind",
    "missed regression": "the gate keeps a revision whose success rate dropped by "
    "min_drop: the error of the second kind",
    "cap rule": "what a test still undecided at max_runs does (at_cap): accept, revert, "
    "or follow the sign of the LLR",
    "LLR": "log-likelihood ratio of 'dropped by min_drop' against 'no change' after the "
    "runs so far; the SPRT reverts when it crosses ln((1 - beta) / alpha)",
    "ledger": "the prior revision's recorded runs, from which p0 (its success rate) is "
    "estimated when it is not known",
    "p0": "the prior revision's success rate; p1 = p0 - min_drop",
    "sessions if unchanged": "expected sessions to a decision when nothing changed, the "
    "revision's and (under concurrent control) the prior's together: what the sweep's "
    "ranking of gates minimises",
    "operating characteristic": "the probability of reverting as a function of the true "
    "drop in success rate",
    "break-even": "the success rate at which the flat rule's expected drift is 0: "
    "penalty / (reward + penalty)",
    "explore rate": "the probability that the top-matched procedure is withheld in a "
    "session, which makes a randomized control arm",
    "power": "the probability of finding an effect that is there: for a gate, of reverting "
    "a revision whose success rate dropped by min_drop (1 - missed regression rate); for the "
    "withheld-vs-shown read, the share of replications (deployments) whose interval excludes 0",
    "coverage": "the share of replications whose 95 % interval contains the true effect",
}
"""Terms the reports use, each defined where it first appears."""

_TERM_PATTERNS = {
    term: re.compile(rf"(?<![\w-]){re.escape(term)}s?(?![\w-])", re.IGNORECASE) for term in GLOSSARY
}
_TERM_PATTERNS["LLR"] = re.compile(r"(?<![\w-])llr(?![\w-])", re.IGNORECASE)
_TERM_PATTERNS["SE"] = re.compile(r"(?<![\w-])SEs?(?![\w-])")


def _texts(section: Section) -> tuple[str, str]:
    """The section's text on the main page (title, answer, paragraphs, captions and the
    columns of the tables kept there) and in the blocks that move to the appendix."""
    main, moved = [section.title, section.answer], []
    for block in section.blocks:
        if isinstance(block, str):
            said = [block]
        elif isinstance(block, Table):
            said = [block.caption, *map(str, block.frame.columns)]
        elif isinstance(block, Figure | Preformatted):
            said = [block.caption]
        else:
            continue
        (moved if is_detail(block) else main).extend(said)
    return "\n".join(main), "\n".join(moved)


def _used(text: str, skip: set[str]) -> list[str]:
    return [t for t in GLOSSARY if t not in skip and _TERM_PATTERNS[t].search(text)]


def define_terms(sections: list[Section]) -> list[Section]:
    """Each section with a "Terms" paragraph for the glossary terms its main-page text
    uses first, and a "Terms" detail (on the appendix page, beside the blocks that use
    them) for those only its moved tables, figures and details use first."""
    on_page: set[str] = set()  # defined on the main page
    anywhere: set[str] = set()  # defined on either page
    out = []
    for section in sections:
        main, moved = _texts(section)
        here = _used(main, on_page)
        there = [t for t in _used(moved, anywhere) if t not in here]
        on_page.update(here)
        anywhere.update(here, there)
        added: list[str] = []
        if here:
            added.append("Terms. " + "; ".join(f"{t}: {GLOSSARY[t]}" for t in here) + ".")
        if there:
            terms = "; ".join(f"{t}: {GLOSSARY[t]}" for t in there)
            added.append(Detail(f"Terms used in the tables and figures above. {terms}."))
        if added:
            section = replace(section, blocks=[*section.blocks, *added])
        out.append(section)
    return out


def _runs_for(sweep: Sweep, section: Section) -> pd.DataFrame:
    """The runs behind a section: those of the scenario its key names (``gates``: gate),
    else those with a table its key names (``ab``: ``ab_arms``), else all."""
    runs = sweep.runs[sweep.runs["status"] == "FINISHED"]
    key = section.key.rstrip("s")
    mine = runs[runs["scenario"].map(lambda s: key.startswith(s) or s.startswith(key))]
    if mine.empty:
        has = [
            any(t.startswith(section.key) for t in sweep.tables.get(r, {})) for r in runs["run_id"]
        ]
        mine = runs[has]
    return mine if len(mine) else runs


def run_counts(runs: pd.DataFrame, reps_cols: list[str]) -> str:
    """``3 runs, 4,000-20,000 replications each, seed 0``."""
    text = f"{len(runs)} run{'s' * (len(runs) != 1)}"
    reps = pd.concat([runs[c] for c in reps_cols if c in runs]).dropna() if reps_cols else None
    if reps is not None and len(reps):
        lo, hi = int(reps.min()), int(reps.max())
        each = f", {lo:,} replication{'s' * (lo != 1)} each"
        text += each if lo == hi else f", {lo:,}-{hi:,} replications"
    seeds = sorted({int(s) for s in runs["seed"].dropna()}) if "seed" in runs else []
    if seeds:
        text += f", seed{'s' * (len(seeds) > 1)} {', '.join(map(str, seeds))}"
    return text


def caption_runs(sweep: Sweep, sections: list[Section]) -> list[Section]:
    """Every figure and table caption ends with the runs, replications and seeds behind it."""
    reps_cols = [p for p in sweep.param_names if p.endswith(".replications")]
    out = []
    for section in sections:
        if section.key in ("sweep", "provenance"):
            out.append(section)
            continue
        note = f" [{run_counts(_runs_for(sweep, section), reps_cols)}]"
        blocks = [
            replace(b, caption=b.caption + note) if isinstance(b, Figure | Table) else b
            for b in section.blocks
        ]
        out.append(replace(section, blocks=blocks))
    return out


def _when(ms: int | None) -> str:
    if ms is None:
        return "unknown"
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%d %H:%M UTC")


def report_versions() -> str:
    """Versions of the packages that build the report."""
    from importlib.metadata import PackageNotFoundError, version

    found = []
    for name in ("procmem", "numpy", "scipy", "pandas", "matplotlib", "mlflow"):
        try:
            found.append(f"{name} {version(name)}")
        except PackageNotFoundError:
            continue
    return ", ".join(found)


def provenance_section(sweep: Sweep, command: str) -> Section:
    """Where the numbers come from: run, date, command, commit, versions, seeds."""
    tags = sweep.parent_tags
    runs = sweep.runs
    commits = sorted({str(c) for c in runs.get("commit", pd.Series(dtype=str)).dropna()})
    commit = tags.get("mlflow.source.git.commit") or (commits[0] if commits else "unknown")
    dirty = " (with uncommitted edits)" if tags.get("procmem.git_dirty") == "true" else ""
    run_cmd = tags.get("procmem.command") or (
        "python -m experiments.run " + tags.get("procmem.overrides", "")
    )
    reps_cols = [p for p in sweep.param_names if p.endswith(".replications")]
    per = pd.DataFrame(
        [
            {"scenario": s, "runs, replications and seeds": run_counts(g, reps_cols)}
            for s, g in runs[runs["status"] == "FINISHED"].groupby("scenario")
        ]
    )
    earlier = (
        f" {sweep.earlier} of its jobs were finished by an earlier sweep it resumed."
        if sweep.earlier
        else ""
    )
    lines = [
        f"Reported: {sweep.chosen}: run {sweep.parent_id} ({sweep.parent_name}), started "
        f"{_when(sweep.parent_start)}.{earlier}",
        f"Sweep command: {run_cmd}",
        f"Report command: {command} (built {datetime.now(UTC).strftime('%Y-%m-%d %H:%M UTC')})",
        f"Code: commit {commit}{dirty}.",
        f"Packages of the jobs: {tags.get('procmem.versions', 'not recorded')}.",
        f"Packages of the report: {report_versions()}.",
        "Seeds: each job's generator comes from numpy.random.SeedSequence of the seed "
        "and the job's config hash (procmem.job_seed on each run), so a job's numbers do "
        "not depend on the launcher or the job order.",
    ]
    blocks: list = [*lines]
    if len(per):
        blocks.append(Table("Runs, replications and seeds per scenario", per))
    answer = f"Run {sweep.parent_id[:8]} at commit {commit[:10]}{dirty}; the exact commands below."
    return Section("provenance", "Where these numbers come from", answer, blocks)
