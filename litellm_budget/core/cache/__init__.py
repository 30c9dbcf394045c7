"""What the prompt cache could read, and where the plugin's breakpoints go."""
