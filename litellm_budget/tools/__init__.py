"""
The tools, never imported by the request path: the ``litellm-budget`` CLI (``cli.py``:
``inspect``, ``replay``, ``demo``), the baselines it compares with, session files, tables,
progress, plots and the proxy runner the demo and the tests use.
"""
