"""
What replicas share through the Redis layer of LiteLLM's DualCache (``shared.py``), in pipelines
that concurrent requests share (``redis_pipe.py``).
"""
