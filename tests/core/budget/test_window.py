"""Window lookup in LiteLLM's local model map, pinned against LiteLLM's own behaviour."""

from __future__ import annotations

from collections.abc import Iterator

import litellm
import pytest

from litellm_budget.core import candidate_names
from litellm_budget.core.budget import model_map_window, shipped_windows


@pytest.fixture(name="registered")
def fixture_registered() -> Iterator[str]:
    name = "acme-internal-model-xyz"
    litellm.register_model({name: {"max_input_tokens": 4321, "litellm_provider": "openai", "mode": "chat"}})
    yield name
    litellm.model_cost.pop(name, None)


class TestModelMap:
    @pytest.mark.parametrize(
        "model", ["gpt-4o", "openai/gpt-4o", "GPT-4o", "claude-sonnet-4-5", "gemini/gemini-2.5-pro"]
    )
    def test_agrees_with_get_model_info(self, model: str) -> None:
        """For mapped models the window is the one LiteLLM ships (a Router may have written over its live map)."""
        expected = shipped_windows()[litellm.get_model_info(model.lower())["key"]]

        assert model_map_window(model) == expected

    def test_unknown_model_is_none(self) -> None:
        """An unknown model has no window; LiteLLM itself raises for it."""
        with pytest.raises(litellm.exceptions.ModelNotMappedError, match="isn't mapped"):
            litellm.get_model_info("acme/unknown-model-xyz")

        assert model_map_window("acme/unknown-model-xyz") is None

    def test_registered_model_with_provider_prefix(self, registered: str) -> None:
        """register_model entries are found by their bare name, prefix or not."""
        assert model_map_window(registered) == 4321
        assert model_map_window(f"openai/{registered}") == 4321

    def test_router_stub_without_window_is_none(self) -> None:
        """A Router registers unknown deployments with max_input_tokens None: that reads as unknown."""
        router = litellm.Router(
            model_list=[{"model_name": "g", "litellm_params": {"model": "openai/acme-stub-xyz", "api_key": "x"}}]
        )

        registry = getattr(router, "registry", None)  # LiteLLM 1.110 deprecates get_model_list for it
        deployments = registry().deployments("g") if callable(registry) else router.get_model_list("g")
        assert [d["model_name"] for d in deployments or []] == ["g"]
        assert "max_input_tokens" not in litellm.model_cost["openai/acme-stub-xyz"]
        assert model_map_window("openai/acme-stub-xyz") is None

    def test_candidates(self) -> None:
        """Names are tried as given, then without each provider prefix."""
        assert list(candidate_names("a/B/c")) == ["a/B/c", "a/b/c", "B/c", "b/c", "c"]
