"""The LiteLLM adapter: read a request, call the core, publish the report, return (``callback.py``: the hooks)."""
