"""``litellm-budget demo``: a built-in agent session replayed through the real LiteLLM proxy on loopback."""
