"""Jobs that are not scenarios: each module here is a task named by its module, with
``run_task(cfg, out_dir) -> ScenarioResult``, the config ``GROUPS`` it reads and,
optionally, ``validate_config(cfg)`` (``experiments.build.tasks`` finds them)."""
