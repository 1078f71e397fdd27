"""procmem's local launcher for Hydra (``hydra/launcher=local``): one process per job."""
