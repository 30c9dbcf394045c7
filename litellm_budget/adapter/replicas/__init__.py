"""What replicas share through the Redis layer of LiteLLM's DualCache, in pipelines concurrent requests share."""
