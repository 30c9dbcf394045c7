"""The plugin's settings: those in force, those refused, and LiteLLM's own compression beside the plugin."""
