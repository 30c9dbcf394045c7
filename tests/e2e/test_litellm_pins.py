"""Pins of the LiteLLM 1.108.5 behaviour this package relies on, run through the real proxy and SDK.

Which CustomLogger hooks fire on ``/v1/messages``, ``/v1/responses`` and ``/v1/completions`` in the
proxy, and on ``litellm.anthropic.messages.acreate`` / ``litellm.aresponses`` in the SDK; with which
``call_type``; where the request's messages, ``system``, ``input`` and LiteLLM's metadata are; whose
edits reach the provider; and whether the logging hooks carry ``spend_logs_metadata`` set before
the call. The recording callback is :mod:`tests.support.hook_recorder`; its marker messages
(``drop-<hook>`` and so on) ask one hook to edit the request, and the fake upstream records the body
the provider got. A failing test here means LiteLLM changed under us: re-verify before upgrading.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anthropic
import litellm
import openai
import pytest

from tests.support import builders
from tests.support.fake_upstream import CWE_MARKER, FakeUpstream
from tests.support.hook_recorder import ENV_VAR, HookRecorder, read_records
from tests.support.proxy_process import REPO_ROOT, ProxyProcess, anthropic_client, openai_client, start_proxy
from tests.support.sdk_support import logging_settled, only_callbacks

pytestmark = pytest.mark.proxy

PRE_CALL = "async_pre_call_hook"
FILTER = "async_filter_deployments"
CHECK = "async_pre_call_check"
DEPLOYMENT = "async_pre_call_deployment_hook"
PRE_REQUEST = "async_pre_request_hook"
MODERATION = "async_moderation_hook"
LOG_PRE = "log_pre_api_call"
POST_SUCCESS = "async_post_call_success_hook"
POST_FAILURE = "async_post_call_failure_hook"
HEADERS = "async_post_call_response_headers_hook"
LOG_SUCCESS = "async_log_success_event"
LOG_FAILURE = "async_log_failure_event"

#: Hooks that run one after another before the provider is called; their order is deterministic.
#: (The moderation hook runs concurrently with the call, and logging runs in background tasks.)
REQUEST_STAGE = (PRE_CALL, FILTER, CHECK, DEPLOYMENT, PRE_REQUEST, LOG_PRE)

PROXY_MESSAGES_ORDER = [PRE_CALL, FILTER, CHECK, DEPLOYMENT, PRE_REQUEST, LOG_PRE]
PROXY_OPENAI_ORDER = [PRE_CALL, FILTER, CHECK, DEPLOYMENT, LOG_PRE]  # responses and text completions
PROXY_SUCCESS_TAIL = [MODERATION, POST_SUCCESS, HEADERS, LOG_SUCCESS]
SDK_MESSAGES_ORDER = [DEPLOYMENT, PRE_REQUEST, LOG_PRE]
SDK_RESPONSES_ORDER = [DEPLOYMENT, LOG_PRE]

SPEND_FROM_BOTH = {f"set_by_{PRE_CALL}": True, f"set_by_{DEPLOYMENT}": True}
SPEND_FROM_DEPLOYMENT = {f"set_by_{DEPLOYMENT}": True}

CLAUDE_GROUP = "claude-group"
GPT_GROUP = "gpt-group"
CLAUDE_MODEL = "anthropic/claude-sonnet-4-5"
GPT_MODEL = "openai/gpt-4o"


def _hooks(records: list[dict[str, Any]]) -> list[str]:
    return [record["hook"] for record in records]


def _stage(records: list[dict[str, Any]]) -> list[str]:
    """The request-stage hooks, in the order they ran."""
    return [hook for hook in _hooks(records) if hook in REQUEST_STAGE]


def _one(records: list[dict[str, Any]], hook: str) -> dict[str, Any]:
    found = [record for record in records if record["hook"] == hook]
    assert len(found) == 1, f"{hook} ran {len(found)} times: {_hooks(records)}"
    return found[0]


def _user(text: str) -> dict[str, str]:
    return {"role": "user", "content": text}


# -- the proxy --------------------------------------------------------------------------------


@dataclass
class Rig:
    """One proxy with the recorder registered, the upstream behind it, and SDK clients in front."""

    proxy: ProxyProcess
    upstream: FakeUpstream
    log: Path
    claude: anthropic.Anthropic
    gpt: openai.OpenAI

    def call(self, request: Callable[[], Any], until: set[str]) -> tuple[Any, list[dict[str, Any]]]:
        """Run ``request``; return its result (or the exception it raised) and the hooks it caused.

        Waits until every hook in ``until`` was recorded: LiteLLM logs in background tasks, after
        the client already has its answer.
        """
        start = len(read_records(self.log))
        self.upstream.clear()
        try:
            result: Any = request()
        except (anthropic.APIError, openai.APIError) as exc:
            result = exc
        deadline = time.monotonic() + 15
        while True:
            records = read_records(self.log)[start:]
            if until <= set(_hooks(records)) or time.monotonic() > deadline:
                return result, records
            time.sleep(0.05)

    def sent(self) -> dict[str, Any]:
        """The one body the provider received for the last call."""
        bodies = self.upstream.requests
        assert len(bodies) == 1, bodies
        return bodies[0]


@pytest.fixture(name="rig", scope="module")
def fixture_rig(upstream: FakeUpstream, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Rig]:
    folder = tmp_path_factory.mktemp("pins")
    log = folder / "hooks.jsonl"
    config = {
        "model_list": [
            builders.deployment(CLAUDE_GROUP, CLAUDE_MODEL, upstream.root_url, window=8000, api_key="sk-upstream"),
            builders.deployment(GPT_GROUP, GPT_MODEL, upstream.base_url, window=8000, api_key="sk-upstream"),
        ],
        "litellm_settings": {"callbacks": ["tests.support.hook_recorder.recorder"]},
    }
    env = {"PYTHONPATH": str(REPO_ROOT), ENV_VAR: str(log)}
    with (
        start_proxy(config, tmp_path=folder, env=env) as proxy,
        anthropic_client(proxy) as claude,
        openai_client(proxy) as gpt,
    ):
        yield Rig(proxy=proxy, upstream=upstream, log=log, claude=claude, gpt=gpt)


# -- (a) /v1/messages to an Anthropic deployment ----------------------------------------------


class TestProxyAnthropicMessages:
    def _create(self, rig: Rig, messages: list[dict[str, Any]], **params: Any) -> Callable[[], Any]:
        return lambda: rig.claude.messages.create(model=CLAUDE_GROUP, max_tokens=16, messages=messages, **params)

    def test_hooks_in_order_with_call_type_anthropic_messages(self, rig: Rig) -> None:
        """/v1/messages runs pre-call, filter, check, deployment and pre-request hooks, then logs success."""
        result, records = rig.call(self._create(rig, [_user("hello")], system="be brief"), {LOG_SUCCESS})

        assert isinstance(result, anthropic.types.Message)
        assert _stage(records) == PROXY_MESSAGES_ORDER
        assert Counter(_hooks(records)) == Counter(PROXY_MESSAGES_ORDER + PROXY_SUCCESS_TAIL)
        assert _one(records, PRE_CALL)["call_type"] == "anthropic_messages"
        assert _one(records, DEPLOYMENT)["call_type"] == "anthropic_messages"
        assert _one(records, LOG_SUCCESS)["slo_call_type"] == "anthropic_messages"
        assert rig.upstream.records[0]["path"] == "/v1/messages"

    def test_where_messages_system_and_metadata_are(self, rig: Rig) -> None:
        """Messages and system are top-level keys; LiteLLM's metadata is litellm_metadata, routed only later."""
        _, records = rig.call(self._create(rig, [_user("hello")], system="be brief"), {LOG_SUCCESS})

        pre_call = _one(records, PRE_CALL)
        assert set(pre_call["keys"]) >= {"messages", "system", "max_tokens", "model", "litellm_metadata"}
        assert "metadata" not in pre_call["keys"]
        assert (pre_call["messages_type"], pre_call["messages_len"], pre_call["system_type"]) == ("list", 1, "str")
        assert pre_call["model"] == CLAUDE_GROUP
        assert "user_api_key_hash" in pre_call["litellm_metadata_keys"]
        assert "model_group" not in pre_call["litellm_metadata_keys"]
        assert pre_call["spend_target"] == "litellm_metadata"

        deployment = _one(records, DEPLOYMENT)
        assert deployment["model"] == CLAUDE_MODEL
        assert {"messages", "system", "model_info", "litellm_metadata"} <= set(deployment["keys"])
        assert {"model_group", "model_info", "deployment"} <= set(deployment["litellm_metadata_keys"])

        pre_request = _one(records, PRE_REQUEST)
        assert pre_request["model"] == CLAUDE_MODEL
        assert not {"messages", "system", "max_tokens"} & set(pre_request["keys"])
        assert {"litellm_metadata", "litellm_params", "stream", "tools"} <= set(pre_request["keys"])

    def test_client_metadata_stays_the_provider_parameter(self, rig: Rig) -> None:
        """A client's Anthropic metadata is data["metadata"] and is forwarded; LiteLLM's stays in litellm_metadata."""
        _, records = rig.call(self._create(rig, [_user("hello")], metadata={"user_id": "u-1"}), {LOG_SUCCESS})

        pre_call = _one(records, PRE_CALL)
        assert pre_call["metadata_keys"] == ["user_id"]
        assert pre_call["spend_target"] == "litellm_metadata"
        assert rig.sent()["metadata"] == {"user_id": "u-1"}

    @pytest.mark.parametrize("client_metadata", [None, {"user_id": "u-1"}], ids=["no-metadata", "metadata"])
    def test_in_place_edits_reach_the_provider(self, rig: Rig, client_metadata: dict[str, str] | None) -> None:
        """Deleting messages in place in all four request hooks, and assigning system, changes what is sent."""
        messages = [_user(f"drop-{hook}") for hook in (PRE_CALL, FILTER, DEPLOYMENT, PRE_REQUEST)]
        params: dict[str, Any] = {"system": f"system-{PRE_CALL}"}
        if client_metadata is not None:
            params["metadata"] = client_metadata

        rig.call(self._create(rig, [*messages, _user("hello")], **params), {LOG_SUCCESS})

        sent = rig.sent()
        assert sent["messages"] == [_user("hello")]
        assert sent["system"] == f"system-edited-by-{PRE_CALL}"

    def test_returned_dict_and_system_from_pre_request_hook(self, rig: Rig) -> None:
        """A dict returned by the pre-call hook replaces the request; a system the pre-request hook sets is sent."""
        messages = [_user(f"return-{PRE_CALL}"), _user(f"set-system-{PRE_REQUEST}")]

        rig.call(self._create(rig, messages, system="original"), {LOG_SUCCESS})

        sent = rig.sent()
        assert sent["messages"] == [_user(f"set-system-{PRE_REQUEST}")]
        assert sent["system"] == f"system-set-by-{PRE_REQUEST}"

    def test_success_and_failure_logging_carry_spend_logs_metadata(self, rig: Rig) -> None:
        """Both logging hooks fire and their payload metadata has the spend_logs_metadata the hooks set."""
        _, ok = rig.call(self._create(rig, [_user("hello")]), {LOG_SUCCESS})
        error, failed = rig.call(self._create(rig, [_user(CWE_MARKER)]), {LOG_FAILURE, POST_FAILURE})

        assert _one(ok, LOG_SUCCESS)["slo_spend_logs_metadata"] == SPEND_FROM_BOTH
        assert isinstance(error, anthropic.BadRequestError)
        assert _stage(failed) == PROXY_MESSAGES_ORDER
        assert Counter(_hooks(failed)) == Counter([*PROXY_MESSAGES_ORDER, MODERATION, LOG_FAILURE, POST_FAILURE])
        failure = _one(failed, LOG_FAILURE)
        assert (failure["slo_status"], failure["slo_call_type"]) == ("failure", "anthropic_messages")
        assert failure["slo_spend_logs_metadata"] == SPEND_FROM_BOTH
        assert _one(failed, POST_FAILURE)["exception_type"] == "ContextWindowExceededError"


# -- (b) /v1/responses to an OpenAI deployment ------------------------------------------------


class TestProxyResponses:
    def _create(self, rig: Rig, value: Any) -> Callable[[], Any]:
        return lambda: rig.gpt.responses.create(model=GPT_GROUP, input=value)

    def test_hooks_in_order_with_call_type_aresponses(self, rig: Rig) -> None:
        """/v1/responses runs pre-call, filter, check and deployment hooks (no pre-request hook), then logs success."""
        result, records = rig.call(self._create(rig, "hello"), {LOG_SUCCESS})

        assert isinstance(result, openai.types.responses.Response)
        assert _stage(records) == PROXY_OPENAI_ORDER
        assert Counter(_hooks(records)) == Counter(PROXY_OPENAI_ORDER + PROXY_SUCCESS_TAIL)
        assert _one(records, PRE_CALL)["call_type"] == "aresponses"
        assert _one(records, DEPLOYMENT)["call_type"] == "aresponses"
        assert _one(records, LOG_SUCCESS)["slo_call_type"] == "aresponses"
        assert rig.upstream.records[0]["path"] == "/v1/responses"

    @pytest.mark.parametrize(("value", "kind"), [("hello", "str"), ([_user("hello")], "list")], ids=["str", "list"])
    def test_where_input_and_metadata_are(self, rig: Rig, value: Any, kind: str) -> None:
        """The request is data["input"] (str or list), never messages; the filter hook gets messages=None."""
        _, records = rig.call(self._create(rig, value), {LOG_SUCCESS})

        pre_call = _one(records, PRE_CALL)
        assert pre_call["keys"] == sorted(
            [
                "input",
                "litellm_call_id",
                "litellm_logging_obj",
                "litellm_metadata",
                "model",
                "proxy_server_request",
                "secret_fields",
            ]
        )
        assert pre_call["input_type"] == kind
        assert pre_call["spend_target"] == "litellm_metadata"
        assert _one(records, FILTER)["messages_type"] == "NoneType"
        deployment = _one(records, DEPLOYMENT)
        assert deployment["model"] == GPT_MODEL
        assert "input" in deployment["keys"]
        assert "messages" not in deployment["keys"]
        assert "model_group" in deployment["litellm_metadata_keys"]

    @pytest.mark.parametrize(
        ("value", "expected"),
        [
            pytest.param(
                [_user(f"drop-{PRE_CALL}"), _user(f"drop-{FILTER}"), _user(f"drop-{DEPLOYMENT}"), _user("hello")],
                [_user(f"drop-{FILTER}"), _user("hello")],
                id="in-place-list",
            ),
            pytest.param([_user(f"return-{PRE_CALL}"), _user("hello")], [_user("hello")], id="returned-list"),
            pytest.param(f"assign-{PRE_CALL}", f"assigned-by-{PRE_CALL}", id="pre-call-assigns-str"),
            pytest.param(f"replace-{PRE_CALL}", f"replaced-by-{PRE_CALL}", id="pre-call-returns-str"),
            pytest.param(f"assign-{DEPLOYMENT}", f"assigned-by-{DEPLOYMENT}", id="deployment-assigns-str"),
            pytest.param(f"replace-{DEPLOYMENT}", f"replaced-by-{DEPLOYMENT}", id="deployment-returns-str"),
        ],
    )
    def test_input_edits_reach_the_provider(self, rig: Rig, value: Any, expected: Any) -> None:
        """Edited, assigned or returned input from the pre-call and deployment hooks is what the provider gets."""
        rig.call(self._create(rig, value), {LOG_SUCCESS})

        assert rig.sent()["input"] == expected

    def test_success_and_failure_logging_carry_spend_logs_metadata(self, rig: Rig) -> None:
        """Both logging hooks fire with spend_logs_metadata; the headers hook also runs on the failure."""
        _, ok = rig.call(self._create(rig, "hello"), {LOG_SUCCESS})
        error, failed = rig.call(self._create(rig, CWE_MARKER), {LOG_FAILURE, POST_FAILURE, HEADERS})

        assert _one(ok, LOG_SUCCESS)["slo_spend_logs_metadata"] == SPEND_FROM_BOTH
        assert isinstance(error, openai.BadRequestError)
        assert Counter(_hooks(failed)) == Counter([*PROXY_OPENAI_ORDER, MODERATION, LOG_FAILURE, POST_FAILURE, HEADERS])
        failure = _one(failed, LOG_FAILURE)
        assert (failure["slo_status"], failure["slo_call_type"]) == ("failure", "aresponses")
        assert failure["slo_spend_logs_metadata"] == SPEND_FROM_BOTH


# -- (c) /v1/completions (text completion) to an OpenAI chat deployment -----------------------


class TestProxyTextCompletions:
    def _create(self, rig: Rig, prompt: str) -> Callable[[], Any]:
        return lambda: rig.gpt.completions.create(model=GPT_GROUP, prompt=prompt, max_tokens=5)

    def test_hooks_call_type_and_prompt_without_messages(self, rig: Rig) -> None:
        """/v1/completions has call_type atext_completion and data["prompt"], no messages; metadata is "metadata"."""
        result, records = rig.call(self._create(rig, "hello"), {LOG_SUCCESS})

        assert isinstance(result, openai.types.Completion)
        assert _stage(records) == PROXY_OPENAI_ORDER
        assert Counter(_hooks(records)) == Counter(PROXY_OPENAI_ORDER + PROXY_SUCCESS_TAIL)
        pre_call = _one(records, PRE_CALL)
        assert pre_call["call_type"] == "atext_completion"
        assert pre_call["keys"] == sorted(
            [
                "litellm_call_id",
                "litellm_logging_obj",
                "max_tokens",
                "metadata",
                "model",
                "prompt",
                "proxy_server_request",
                "secret_fields",
            ]
        )
        assert pre_call["prompt_type"] == "str"
        assert pre_call["spend_target"] == "metadata"
        deployment = _one(records, DEPLOYMENT)
        assert deployment["call_type"] == "atext_completion"
        assert "prompt" in deployment["keys"]
        assert "messages" not in deployment["keys"]
        assert _one(records, LOG_SUCCESS)["slo_call_type"] == "atext_completion"

    def test_filter_hook_gets_a_messages_copy_that_does_not_reach_the_provider(self, rig: Rig) -> None:
        """The filter hook sees a messages list built from the prompt; deleting from it changes nothing sent."""
        prompt = f"drop-{FILTER}"

        _, records = rig.call(self._create(rig, prompt), {LOG_SUCCESS})

        filtered = _one(records, FILTER)
        assert filtered["messages_type"] == "list"
        assert not {"messages", "prompt"} & set(filtered["keys"])
        assert rig.upstream.records[0]["path"] == "/v1/chat/completions"
        assert rig.sent()["messages"] == [_user(prompt)]

    def test_success_and_failure_logging_carry_spend_logs_metadata(self, rig: Rig) -> None:
        """Both logging hooks fire on text completions with the spend_logs_metadata the hooks set."""
        _, ok = rig.call(self._create(rig, "hello"), {LOG_SUCCESS})
        error, failed = rig.call(self._create(rig, CWE_MARKER), {LOG_FAILURE, POST_FAILURE})

        assert _one(ok, LOG_SUCCESS)["slo_spend_logs_metadata"] == SPEND_FROM_BOTH
        assert isinstance(error, openai.BadRequestError)
        assert Counter(_hooks(failed)) == Counter([*PROXY_OPENAI_ORDER, MODERATION, LOG_FAILURE, POST_FAILURE])
        assert _one(failed, LOG_FAILURE)["slo_spend_logs_metadata"] == SPEND_FROM_BOTH


# -- (d) SDK: litellm.anthropic.messages.acreate and litellm.aresponses -------------------------


@pytest.fixture(name="sdk_recorder")
def fixture_sdk_recorder(tmp_path: Path) -> Iterator[HookRecorder]:
    recorder = HookRecorder(tmp_path / "sdk_hooks.jsonl")
    with only_callbacks(recorder):
        yield recorder


async def _sdk_call(
    recorder: HookRecorder, upstream: FakeUpstream, request: Callable[[], Any], until: str
) -> tuple[Any, list[dict[str, Any]]]:
    """
    Await ``request`` and return its result (or exception) and the records it made, once
    ``until`` was logged: those written before it, by earlier calls' logging, are left out.
    """
    path = recorder.path
    await logging_settled()
    earlier = len(read_records(path))
    upstream.clear()
    try:
        result: Any = await request()
    except litellm.exceptions.BadRequestError as exc:
        result = exc
    for _ in range(500):
        records = read_records(path)[earlier:]
        if until in _hooks(records):
            break
        await asyncio.sleep(0.02)
    return result, read_records(path)[earlier:]


@pytest.mark.asyncio
class TestSdk:
    async def test_anthropic_messages_acreate_hooks(self, upstream: FakeUpstream, sdk_recorder: HookRecorder) -> None:
        """acreate runs the deployment hook (anthropic_messages) and the pre-request hook; both edits are sent."""
        messages = [_user(f"drop-{DEPLOYMENT}"), _user(f"drop-{PRE_REQUEST}"), _user("hello")]

        result, records = await _sdk_call(
            sdk_recorder,
            upstream,
            lambda: litellm.anthropic.messages.acreate(
                model=CLAUDE_MODEL,
                max_tokens=16,
                messages=messages,
                system=f"system-{DEPLOYMENT}",
                api_base=upstream.root_url,
                api_key="sk-upstream",
            ),
            LOG_SUCCESS,
        )

        assert result["content"][0]["text"] == "ok"
        assert _hooks(records) == [*SDK_MESSAGES_ORDER, LOG_SUCCESS]
        deployment = _one(records, DEPLOYMENT)
        assert deployment["call_type"] == "anthropic_messages"
        assert deployment["model"] == CLAUDE_MODEL
        assert {"messages", "system", "metadata", "max_tokens", "api_base"} <= set(deployment["keys"])
        assert not {"litellm_metadata", "model_info"} & set(deployment["keys"])
        assert _one(records, PRE_REQUEST)["keys"] == sorted(
            ["container", "litellm_call_id", "litellm_logging_obj", "litellm_params", "stream", "tool_choice", "tools"]
        )
        sent = upstream.requests[-1]
        assert sent["messages"] == [_user("hello")]
        assert sent["system"] == f"system-edited-by-{DEPLOYMENT}"
        assert _one(records, LOG_SUCCESS)["slo_call_type"] == "anthropic_messages"

    async def test_aresponses_hooks(self, upstream: FakeUpstream, sdk_recorder: HookRecorder) -> None:
        """aresponses runs only the deployment hook (aresponses, with input) before the call; its edit is sent."""
        result, records = await _sdk_call(
            sdk_recorder,
            upstream,
            lambda: litellm.aresponses(
                model=GPT_MODEL,
                input=[_user(f"drop-{DEPLOYMENT}"), _user("hello")],
                api_base=upstream.base_url,
                api_key="sk-upstream",
            ),
            LOG_SUCCESS,
        )

        assert result.output[0].content[0].text == "ok"
        assert _hooks(records) == [*SDK_RESPONSES_ORDER, LOG_SUCCESS]
        deployment = _one(records, DEPLOYMENT)
        assert deployment["call_type"] == "aresponses"
        assert deployment["keys"] == sorted(
            ["api_base", "api_key", "input", "litellm_call_id", "litellm_logging_obj", "model"]
        )
        assert upstream.requests[-1]["input"] == [_user("hello")]
        assert _one(records, LOG_SUCCESS)["slo_call_type"] == "aresponses"

    @pytest.mark.parametrize("api", ["messages", "responses"])
    @pytest.mark.parametrize(
        ("extra", "expected"),
        [({}, None), ({"litellm_metadata": {}}, SPEND_FROM_DEPLOYMENT)],
        ids=["no-metadata", "litellm_metadata"],
    )
    async def test_logging_and_spend_logs_metadata(
        self,
        upstream: FakeUpstream,
        sdk_recorder: HookRecorder,
        api: str,
        extra: dict[str, Any],
        expected: dict[str, bool] | None,
    ) -> None:
        """Success and failure logging fire; spend_logs_metadata reaches them only via a caller's litellm_metadata."""

        def request(text: str) -> Callable[[], Any]:
            if api == "messages":
                return lambda: litellm.anthropic.messages.acreate(
                    model=CLAUDE_MODEL,
                    max_tokens=16,
                    messages=[_user(text)],
                    api_base=upstream.root_url,
                    api_key="sk-upstream",
                    **extra,
                )
            return lambda: litellm.aresponses(
                model=GPT_MODEL, input=text, api_base=upstream.base_url, api_key="sk-upstream", **extra
            )

        _, ok = await _sdk_call(sdk_recorder, upstream, request("hello"), LOG_SUCCESS)
        error, failed = await _sdk_call(sdk_recorder, upstream, request(CWE_MARKER), LOG_FAILURE)

        assert _one(ok, LOG_SUCCESS)["slo_spend_logs_metadata"] == expected
        assert isinstance(error, litellm.ContextWindowExceededError)
        order = SDK_MESSAGES_ORDER if api == "messages" else SDK_RESPONSES_ORDER
        assert _hooks(failed) == [*order, LOG_FAILURE]
        assert _one(failed, LOG_FAILURE)["slo_spend_logs_metadata"] == expected
