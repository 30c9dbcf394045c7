"""What a replayed prompt costs: the model's own input and prompt-cache prices from LiteLLM's model map."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import TypeVar

from litellm_budget.core import candidate_names
from litellm_budget.core.api import is_mapping, is_number

_T = TypeVar("_T")

#: The fresh input price assumed for a model the map has no price for: $1 per million tokens.
FALLBACK_PER_TOKEN = 1 / 1_000_000


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


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Prices:
    """
    Dollars per token for each way a prompt token is billed.

    ``reused``: a token of the prefix the previous prompt cached (the cache-read price);
    ``reprefilled``: a token computed again: the cache-write price where the provider charges
    writes (Anthropic), else the fresh input price. A model without cache prices bills both at
    the input price. ``source`` says where each number came from.
    """

    input: float
    reused: float
    reprefilled: float
    source: str

    def cost(self, *, reused: int, reprefilled: int) -> float:
        """Dollars for ``reused`` tokens read from the cache and ``reprefilled`` tokens computed again."""
        return reused * self.reused + reprefilled * self.reprefilled


def prices_for(
    model: str,
    *,
    per_mtok: float | None = None,
    cached_share: float | None = None,
    write_share: float | None = None,
) -> Prices:
    """
    ``model``'s prices from LiteLLM's model map (``input_cost_per_token``,
    ``cache_read_input_token_cost``, ``cache_creation_input_token_cost``), each overridable:
    ``per_mtok`` sets the input price (the map's cache prices keep their ratio to it),
    ``cached_share`` the cache-read price and ``write_share`` the cache-write price, as shares of it.
    """
    found = {field: _map_price(model, field) for field in _FIELDS}
    mapped_input = found["input_cost_per_token"]
    if per_mtok is not None:
        price, input_source = per_mtok / 1_000_000, "--price-per-mtok"
    elif mapped_input is not None:
        price, input_source = mapped_input, "model map"
    else:
        price, input_source = FALLBACK_PER_TOKEN, "assumed: the model map has no price for it"
    read, read_source = _share(cached_share, "--cached-share", found["cache_read_input_token_cost"], mapped_input)
    write, write_source = _share(
        write_share, "--cache-write-share", found["cache_creation_input_token_cost"], mapped_input
    )
    reused, reprefilled = price * (read if read is not None else 1.0), price * (write if write is not None else 1.0)
    parts = [
        f"input ${_per_mtok(price):g}/M ({input_source})",
        f"reused prefix at ${_per_mtok(reused):g}/M "
        + (f"(cache read, {read_source})" if read is not None else "(no cache-read price: the input price)"),
        f"re-prefilled at ${_per_mtok(reprefilled):g}/M "
        + (f"(cache write, {write_source})" if write is not None else "(the input price: no cache-write price)"),
    ]
    return Prices(input=price, reused=reused, reprefilled=reprefilled, source=f"{model}: " + "; ".join(parts))


_FIELDS = ("input_cost_per_token", "cache_read_input_token_cost", "cache_creation_input_token_cost")


def unpriced(model: str) -> str | None:
    """
    Why ``model`` has no input price in LiteLLM's model map (a name it does not know is most
    often a typo); ``None`` when it has one. A replay priced at a guess would read as a measurement.
    """
    if _map_price(model, "input_cost_per_token") is not None:
        return None
    known = model_map_value(model, "litellm_provider", lambda value: value or None) is not None
    return "has no input price in LiteLLM's model map" if known else "is not in LiteLLM's model map (a typo?)"


def _share(
    flag: float | None, flag_name: str, mapped: float | None, mapped_input: float | None
) -> tuple[float | None, str]:
    """A cache price as a share of the input price: the flag's, else the map's ratio, else none."""
    if flag is not None:
        return flag, flag_name
    if mapped is not None and mapped_input:
        return mapped / mapped_input, "model map"
    return None, ""


def _map_price(model: str, field: str) -> float | None:
    return model_map_value(model, field, lambda value: float(value) if is_number(value) and value >= 0 else None)


def _per_mtok(per_token: float) -> float:
    return round(per_token * 1_000_000, 6)
