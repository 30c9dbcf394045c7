"""The benchmarks of a clone (scripts run one by one), and the research replay: ``python -m benchmarks.replay``."""
