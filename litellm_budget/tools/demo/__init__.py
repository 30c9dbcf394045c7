"""
``litellm-budget demo``: the real LiteLLM proxy on loopback (``proxy.py`` starts it and waits for
it), its config (``config.yaml``), and a built-in agent session (``agent.py``) replayed through it
(``run.py``).
"""
