"""Hydra entry point: ``python -m experiments.run experiment=<preset> [overrides]``."""

from __future__ import annotations

import sys
from pathlib import Path

import hydra
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig

from experiments.seed_demo import confidence_paths, demo_text, save_figure


@hydra.main(config_path="../conf", config_name="config", version_base="1.3")
def main(cfg: DictConfig) -> None:
    out_dir = Path(HydraConfig.get().runtime.output_dir)
    if cfg.task == "seed_demo":
        sys.stdout.write(demo_text())
        sys.stdout.flush()
        _, paths = confidence_paths()
        figure = save_figure(paths, out_dir / "confidence_paths.png")
        print(f"figure: {figure}", file=sys.stderr)
        return
    raise ValueError(f"task={cfg.task!r} is not allowed: expected one of ['seed_demo']")


if __name__ == "__main__":
    main()
