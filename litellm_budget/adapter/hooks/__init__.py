"""
A request's way through the hooks: one pass per hook (``hook_pass.py``: the request read once),
run through a chain of named steps (``chain.py``); each hook's chain and what its pass does
differently (``passes.py``), what the hooks after the answer observe (``observers.py``), a refusal
LiteLLM made first (``unfitted.py``), cache hints (``cache_hints.py``).
"""
