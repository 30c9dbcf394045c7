"""
A request's way through the hooks: one pass per hook (``hook_pass.py``: read once; before, fit,
write, after), what each hook does differently (``passes.py``), what the hooks after the answer
observe (``observers.py``), a refusal LiteLLM made first (``unfitted.py``), cache hints (``cache_hints.py``).
"""
