"""Find a model's context window in LiteLLM's local model map, never over the network."""

from __future__ import annotations

from collections.abc import Iterator, Mapping


def model_map_window(model: str) -> int | None:
    """
    ``max_input_tokens`` of ``model`` in ``litellm.model_cost``; ``None`` when unknown.

    The map is read directly: ``litellm.get_model_info`` asks a live server for some
    providers (ollama, lemonade) and ``get_max_tokens`` fetches from Hugging Face. The name is
    tried as given first (``register_model`` and deployments may know only the full name),
    then without its provider prefixes (``openai/gpt-4o`` is ``gpt-4o``). A Router registers
    unknown deployments with ``max_input_tokens: None``, which also reads as unknown.
    """
    import litellm

    cost_map = litellm.model_cost
    for name in candidate_names(model):
        entry = cost_map.get(name)
        if isinstance(entry, Mapping):
            window = positive_int(entry.get("max_input_tokens"))
            if window is not None:
                return window
    return None


def candidate_names(model: str) -> Iterator[str]:
    """``a/b/c``, then ``b/c``, then ``c``, each also lower-cased; no repeats."""
    seen: set[str] = set()
    parts = model.split("/")
    for start in range(len(parts)):
        name = "/".join(parts[start:])
        for variant in (name, name.lower()):
            if variant and variant not in seen:
                seen.add(variant)
                yield variant


def positive_int(value: object) -> int | None:
    """``value`` if it is a positive int (bools and floats are not), else ``None``."""
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return value
    return None
