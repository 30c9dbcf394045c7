"""The recall tool: what a fit took out, kept per conversation and served back to the model inside LiteLLM."""
