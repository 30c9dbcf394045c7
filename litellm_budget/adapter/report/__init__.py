"""
Where a report goes: the structlog event, LiteLLM's metadata and headers (``publish.py``), Prometheus
(``metrics.py``), a count finished after the request left (``later_counts.py``), and what the
provider's prompt cache did (``cache_observed.py``).
"""
