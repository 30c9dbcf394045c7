"""Find a model's context window in LiteLLM's local model map, never over the network."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from .checks import candidate_names, is_mapping, positive_int

_T = TypeVar("_T")


def model_map_window(model: str) -> int | None:
    """
    ``max_input_tokens`` of ``model`` in ``litellm.model_cost``; ``None`` when unknown.

    The map is read directly: ``litellm.get_model_info`` asks a live server for some
    providers (ollama, lemonade) and ``get_max_tokens`` fetches from Hugging Face. The name is
    tried as given first (``register_model`` and deployments may know only the full name),
    then without its provider prefixes (``openai/gpt-4o`` is ``gpt-4o``). A Router registers
    unknown deployments with ``max_input_tokens: None``, which also reads as unknown.
    """
    return model_map_value(model, "max_input_tokens", positive_int)


def model_map_value(model: str, field: str, accept: Callable[[object], _T | None]) -> _T | None:
    """The first value of ``field`` that ``accept`` takes, over the ``candidate_names`` of ``model``."""
    import litellm

    cost_map = litellm.model_cost
    for name in candidate_names(model):
        entry = cost_map.get(name)
        if is_mapping(entry):
            value = accept(entry.get(field))
            if value is not None:
                return value
    return None
