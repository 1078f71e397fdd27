"""The notebook seed's confidence demo, reproduced: two paths, the prompt, the figure."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

from procmem_core.flat import (
    DEFAULT_LIMIT,
    DEFAULT_RULE,
    DEFAULT_THRESHOLD,
    ConfidenceRule,
    Procedure,
    build_system_prompt,
)

if TYPE_CHECKING:
    from omegaconf import DictConfig

    from simulators.result import ScenarioResult

SEED_SEQUENCES: tuple[tuple[tuple[str, str, str], tuple[bool, ...]], ...] = (
    (
        (
            "Quantify the worst case",
            "When the user asks about an investment",
            "Always quantify the worst-case scenario before the user asks.",
        ),
        (True, True, False, True, True),
    ),
    (
        (
            "Push equity",
            "When the user has a long horizon",
            "Recommend adding an equity component for higher returns.",
        ),
        (False, False),
    ),
)


def confidence_paths(
    rule: ConfidenceRule = DEFAULT_RULE,
) -> tuple[list[Procedure], dict[str, list[float]]]:
    """Run the seed's outcome sequences; return the procedures and their confidence paths."""
    procedures, paths = [], {}
    for (title, trigger, description), outcomes in SEED_SEQUENCES:
        proc = Procedure(title, trigger, description, confidence=rule.initial)
        paths[title] = [proc.confidence]
        for positive in outcomes:
            proc.record_outcome(positive, rule)
            paths[title].append(proc.confidence)
        procedures.append(proc)
    return procedures, paths


DEMO_THRESHOLD = DEFAULT_THRESHOLD
"""The seed's prompt threshold, which its demo prints and draws with."""

GROUPS: tuple[str, ...] = ()
"""Config groups the task reads: none (the demo is the seed's, character for character)."""


def demo_text(
    threshold: float = DEMO_THRESHOLD,
    limit: int = DEFAULT_LIMIT,
    rule: ConfidenceRule = DEFAULT_RULE,
) -> str:
    """Exactly what the seed prints: one line per path, a blank line, the system prompt."""
    procedures, paths = confidence_paths(rule)
    return render_demo(procedures, paths, threshold, limit)


def render_demo(
    procedures: list[Procedure],
    paths: dict[str, list[float]],
    threshold: float = DEMO_THRESHOLD,
    limit: int = DEFAULT_LIMIT,
) -> str:
    """The seed's printed text for procedures whose confidence paths are ``paths``."""
    lines = []
    for proc in procedures:
        path = " -> ".join(f"{c:.2f}" for c in paths[proc.title])
        lines.append(
            f"{proc.title}: {path}   (successes {proc.successes}, failures {proc.failures})"
        )
    return "\n".join(lines) + "\n\n" + build_system_prompt(procedures, threshold, limit) + "\n"


def save_figure(
    paths: dict[str, list[float]],
    out: Path,
    threshold: float = DEMO_THRESHOLD,
    rule: ConfidenceRule = DEFAULT_RULE,
) -> Path:
    """The seed's figure: confidence against applied sessions, with the threshold line."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 3.2))
    for title, path in paths.items():
        ax.plot(range(len(path)), path, marker="o", label=title)
    ax.axhline(threshold, color="gray", linestyle="--", label=f"threshold {threshold:.2f}")
    ax.set_xlabel("sessions in which the procedure was applied")
    ax.set_ylabel("confidence")
    ax.set_ylim(0, 1)
    ax.set_title(
        f"Confidence follows outcomes: +{rule.reward:.2f} on success, "
        f"-{rule.penalty:.2f} on failure"
    )
    ax.legend(loc="lower right")
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=120)
    plt.close(fig)
    return out


def run_task(cfg: DictConfig, out_dir: Path) -> ScenarioResult:
    """The ``seed_demo`` task: print the seed's text, save its figure, record the paths.

    Metrics: each procedure's final confidence (``final_confidence.<title>``) and the
    prompt ``threshold``; table ``confidence_paths`` (procedure, session, confidence);
    figure ``artifacts/figures/confidence_paths.png``; the printed text
    ``artifacts/seed_demo.txt``.
    """
    import pandas as pd

    from simulators.result import ScenarioResult

    procedures, paths = confidence_paths()
    text = render_demo(procedures, paths, DEMO_THRESHOLD)
    sys.stdout.write(text)
    sys.stdout.flush()
    art = Path(out_dir) / "artifacts"
    save_figure(paths, art / "figures" / "confidence_paths.png", DEMO_THRESHOLD)
    (art / "seed_demo.txt").write_text(text, encoding="utf-8")
    result = ScenarioResult("seed_demo")
    result.metrics["threshold"] = DEMO_THRESHOLD
    for title, path in paths.items():
        result.metrics[f"final_confidence.{title}"] = path[-1]
    result.tables["confidence_paths"] = pd.DataFrame(
        [
            {"procedure": title, "session": k, "confidence": c}
            for title, path in paths.items()
            for k, c in enumerate(path)
        ]
    )
    return result
