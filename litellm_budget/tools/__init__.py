"""
The tools, never imported by the request path: the ``litellm-budget`` CLI (``cli.py``:
``inspect``, ``replay``, ``demo``), the replay loop (``replay.py``), session files, tables,
progress and the proxy runner the demo and the tests use. The research replay (peers, evidence,
prices, caches, plots) is a clone's, outside the wheel: ``benchmarks/lab``.
"""
