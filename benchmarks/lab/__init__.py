"""
The research replay, outside the wheel: the peers and baselines it compares with, evidence recall,
prices, the provider's cache and the plots, measured on the wheel's replay loop
(``litellm_budget.tools.replay``). ``python -m benchmarks.replay`` runs it from a clone's root.
"""
