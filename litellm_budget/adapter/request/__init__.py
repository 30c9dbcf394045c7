"""
What a LiteLLM request is fitted against: what its kwargs hold (``kwargs.py``), where each call
type keeps its messages (``shapes.py``), its window and settings (``targets.py``), and the
operator's fallbacks with the plugin's refit among them (``fallbacks.py``).
"""
