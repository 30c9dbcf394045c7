"""Where a report goes: the log event, LiteLLM's metadata and headers, metrics, and what the cache did."""
