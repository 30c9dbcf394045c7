"""What a LiteLLM request is fitted against: where its call type keeps its messages, its window, settings, fallbacks."""
