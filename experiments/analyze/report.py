"""The analysis's files: ``lifts.csv`` (and the replay / world files when computed),
``report.md`` and ``index.html`` (the same sections, tables as HTML)."""

from __future__ import annotations

import html
import json
from pathlib import Path
from typing import Any

import pandas as pd

from procmem_core.logs import SCHEMA_VERSION, Lifts

SHOWN = ("key", "n_shown", "n_withheld", "lift", "ci_low", "ci_high", "cs_low", "cs_high",
         "p_holm", "srm_p", "srm_flag", "effect")  # fmt: skip


def lifts_frame(lifts: Lifts) -> pd.DataFrame:
    return pd.DataFrame(lifts.columns)


def lift_section(lifts: Lifts, level: float) -> tuple[str, pd.DataFrame | None]:
    """The lift part: what was estimated and how, or why nothing could be."""
    s = lifts.summary
    lines = [
        f"{int(s['sessions'])} sessions, {int(s['matched'])} with a top-matched procedure, "
        f"{int(s['procedures'])} procedures, {int(s['procedures_with_withheld'])} of them "
        "with withheld sessions.",
        *lifts.notes,
    ]
    if lifts.plan is not None:
        p = lifts.plan
        lines.append(
            "No procedure has a withheld session: the lifts cannot be estimated. To detect a "
            f"lift of {p['target_lift']:+g} on a success rate of {p['base']:.2f} with power "
            f"{p['power']:.2f} at explore rate {p['explore_rate']:g}, the planner needs "
            f"{int(p['sessions'])} sessions of a procedure, {p['withheld']:.0f} of them withheld"
            + (
                f" (at the {p['rated_share']:.0%} of matched sessions that were rated)."
                if p["rated_share"] < 1 else "."
            )
        )  # fmt: skip
        return "\n\n".join(lines), None
    lines.append(
        f"Intervals: fixed-n {100 * level:g}% (`ci_low`, `ci_high`) and a confidence sequence "
        "valid at any stopping time (`cs_low`, `cs_high`). `p_holm` / `p_bh`: adjusted across the "
        "procedures not flagged for a sample-ratio mismatch (`srm_flag`, p < 0.001 against "
        "the logged explore rate); a flagged procedure never counts as an effect. "
        f"{int(s['srm_flagged'])} flagged; {int(s['effects'])} effects at Holm "
        f"{1 - level:g}."
    )
    frame = lifts_frame(lifts)
    return "\n\n".join(lines), frame


def _md_table(frame: pd.DataFrame, rows: int = 30) -> str:
    f = frame.head(rows)
    cols = [str(c) for c in f.columns]
    out = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for rec in f.itertuples(index=False):
        cells = [f"{v:.4g}" if isinstance(v, float) else str(v) for v in rec]
        out.append("| " + " | ".join(cells) + " |")
    more = len(frame) - len(f)
    return "\n".join(out) + (f"\n\n({more} more rows in the CSV file)" if more > 0 else "")


def write_report(out: Path, source: str, sections: list[tuple[str, str, Any]]) -> None:
    """``report.md`` and ``index.html`` from ``(title, text, frame or dict or None)``."""
    md = [f"# Analysis of {source}", f"Session log schema version {SCHEMA_VERSION}."]
    body = [f"<h1>Analysis of {html.escape(source)}</h1>",
            f"<p>Session log schema version {SCHEMA_VERSION}.</p>"]  # fmt: skip
    for title, text, table in sections:
        md += [f"## {title}", text]
        body += [f"<h2>{html.escape(title)}</h2>"]
        body += [f"<p>{html.escape(p)}</p>" for p in text.split("\n\n")]
        if isinstance(table, pd.DataFrame):
            md.append(_md_table(table))
            body.append(table.head(200).to_html(index=False, float_format=lambda v: f"{v:.4g}"))
        elif isinstance(table, dict):
            dumped = json.dumps(table, indent=1)
            md.append("```json\n" + dumped + "\n```")
            body.append(f"<pre>{html.escape(dumped)}</pre>")
    (out / "report.md").write_text("\n\n".join(md) + "\n", "utf-8")
    page = "<!doctype html><html><head><meta charset='utf-8'><title>procmem analysis</title>"
    page += "<style>body{font-family:sans-serif;max-width:70em;margin:auto}"
    page += "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:2px 6px}</style>"
    (out / "index.html").write_text(page + "</head><body>" + "\n".join(body) + "</body></html>")
