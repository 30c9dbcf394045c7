"""OpenAI Responses through the real proxy and the real openai SDK: fitted natively, reported truly."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import openai
import pytest

from litellm_budget.core.counting import counter_for
from litellm_budget.core.formats import RESPONSES
from litellm_budget.core.formats import responses_from_chat as from_chat
from litellm_budget.core.validity import responses_unsupported as unsupported_reason
from tests.support.builders import agent_session
from tests.support.fake_upstream import FakeUpstream
from tests.support.proxy_process import ProxyProcess, openai_client, start_proxy

pytestmark = pytest.mark.proxy
WINDOW = 8000
INSTRUCTIONS = "You are a coding agent. Use the tools."


@pytest.fixture(name="proxy", scope="module")
def fixture_proxy(upstream: FakeUpstream, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ProxyProcess]:
    config = {
        "model_list": [
            {
                "model_name": "gpt",
                "litellm_params": {"model": "openai/gpt-4o", "api_base": upstream.base_url, "api_key": "k"},
                "model_info": {"max_input_tokens": WINDOW},
            }
        ],
        "litellm_settings": {"callbacks": ["litellm_budget.handler"]},
    }
    with start_proxy(config, tmp_path=tmp_path_factory.mktemp("responses")) as proxy:
        yield proxy


@pytest.fixture(name="client")
def fixture_client(proxy: ProxyProcess) -> Iterator[openai.OpenAI]:
    with openai_client(proxy) as client:
        yield client


def _items() -> list[dict[str, Any]]:
    """About 20k tokens of an agent's tool history, as Responses input items."""
    return from_chat(agent_session(30, 700)[1:])


def test_input_items_are_fitted_natively(client: openai.OpenAI, upstream: FakeUpstream) -> None:
    """What the provider gets fits, every output answers its call, instructions untouched."""
    items = _items()
    upstream.clear()

    raw = client.responses.with_raw_response.create(model="gpt", instructions=INSTRUCTIONS, input=items)  # type: ignore[arg-type]
    sent = upstream.requests[-1]
    counter = counter_for("gpt-4o")

    assert raw.headers["x-litellm-budget-action"] == "trimmed"
    assert sent["instructions"] == INSTRUCTIONS
    assert unsupported_reason(sent["input"], None, None) is None
    assert sum(RESPONSES.count_message(counter, item) for item in sent["input"]) < WINDOW
    assert not any("litellm_budget_instructions" in item for item in sent["input"])


def test_a_server_side_history_is_passed_through_and_says_why(client: openai.OpenAI, upstream: FakeUpstream) -> None:
    """With previous_response_id the history is the provider's: the request goes as sent, the report says why."""
    upstream.clear()

    raw = client.responses.with_raw_response.create(model="gpt", input="And then?", previous_response_id="resp_123")

    assert raw.headers["x-litellm-budget-action"] == "unsupported"
    assert upstream.requests[-1]["input"] in ("And then?", [{"role": "user", "content": "And then?"}])
