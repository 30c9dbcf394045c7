"""Find a model's context window in LiteLLM's local model map, never over the network."""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Mapping
from types import MappingProxyType

from litellm_budget.core._checks import candidate_names, is_mapping, positive_int

#: How an operator gives a model the map does not know its window: said wherever it is missing.
WINDOW_FIX = "give its deployment model_info: {max_input_tokens: <its window>}, or set default_window"
#: Finds a model's ``max_input_tokens``; ``None`` when the model is unknown.
WindowLookup = Callable[[str], "int | None"]


def resolve_window(
    model: str, window: int | None, default: int | None, lookup: WindowLookup
) -> tuple[int | None, str | None]:
    """The caller's window (a positive int), else ``lookup(model)``, else ``default``, and why ``lookup`` found none."""
    if window is not None:
        if positive_int(window) is None:
            msg = f"window must be a positive int, got {window!r}"
            raise ValueError(msg)
        return window, None
    try:
        found = positive_int(lookup(model))
    # The model map is LiteLLM's and may fail in ways we cannot list: fall back to the default, never fail the request.
    except Exception as exc:  # noqa: BLE001
        reason = f"window lookup failed: {type(exc).__name__}"
    else:
        if found is not None:
            return found, None
        reason = f"model has no max_input_tokens in LiteLLM's model map; {WINDOW_FIX}"
    return default, reason


def model_map_window(model: str) -> int | None:
    """
    ``max_input_tokens`` of ``model`` (its full name first: ``register_model`` and deployments may know only it)
    in LiteLLM's model map as shipped, else in ``litellm.model_cost`` for a name registered since; ``None`` when
    unknown (a Router registers those with ``None``). Read directly: ``litellm.get_model_info`` asks a live
    server for some providers (ollama, lemonade), and ``get_max_tokens`` fetches from Hugging Face.
    """
    import litellm

    shipped = shipped_windows()
    for name in candidate_names(model):
        entry = litellm.model_cost.get(name)
        found = shipped[name] if name in shipped else entry.get(WINDOW) if is_mapping(entry) else None
        window = positive_int(found)
        if window is not None:
            return window
    return None


@functools.cache
def shipped_windows() -> Mapping[str, object]:
    """
    ``max_input_tokens`` by name in the model map file LiteLLM ships (``LITELLM_LOCAL_MODEL_COST_MAP``),
    read once: a Router writes each deployment's ``model_info`` over the live map's entry of its backend
    model, making one deployment's window every other's; no Router writes this file.
    """
    from importlib.resources import files

    shipped = json.loads(files("litellm").joinpath("model_prices_and_context_window_backup.json").read_bytes())
    return MappingProxyType({name: entry.get(WINDOW) for name, entry in shipped.items() if is_mapping(entry)})


WINDOW = "max_input_tokens"
