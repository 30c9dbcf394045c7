"""
The settings in force (``config.py``), what is refused at start (``invalid.py``), and LiteLLM's own
compression beside this plugin (``coexistence.py``).
"""
