"""
Through the real proxy: the plugin as a LiteLLM guardrail (``guardrails:`` in config.yaml), with
virtual keys whose key and team metadata come from ``general_settings.custom_auth`` (no database).
It runs where LiteLLM's guardrail rules say (``default_on``, a request's ``guardrails``, a key's or
team's opt-out), fits with the settings of the key and team, records its work as guardrails do,
and is refused at start beside the callback form.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from litellm_budget.core.formats import responses_from_chat
from tests.support.builders import agent_session
from tests.support.docs import block
from tests.support.fake_upstream import FakeUpstream
from tests.support.jsonl import complete_records, wait_for_records
from tests.support.paths import DOCS
from tests.support.proxy_process import ProxyProcess, ProxyStartError, post_chat, post_json, start_proxy

pytestmark = pytest.mark.proxy
WINDOW = 6000
HELPERS = ("proxy_keys.py", "proxy_spend_rows.py", "proxy_structlog.py")
PAGE = DOCS / "guardrail.md"
#: The guardrail as the page registers it, and the key metadata it shows.
(GUARDRAIL,) = yaml.safe_load(block("yaml", "The config", "guardrail:", page=PAGE))["guardrails"]
NAME = GUARDRAIL["guardrail_name"]
PAGE_KEY = json.loads(block("json", "Settings per key and per team", "litellm_budget", page=PAGE))


def _config(upstream: FakeUpstream, *, default_on: bool, callbacks: tuple[str, ...] = ()) -> dict[str, Any]:
    model = {"model": "openai/gpt-4o", "api_base": upstream.base_url, "api_key": "k"}
    guardrail = copy.deepcopy(GUARDRAIL)
    guardrail["litellm_params"]["default_on"] = default_on
    return {
        "model_list": [{"model_name": "m", "litellm_params": model, "model_info": {"max_input_tokens": WINDOW}}],
        "litellm_settings": {"callbacks": [*callbacks, "proxy_structlog.configured", "proxy_spend_rows.rows"]},
        "guardrails": [guardrail],
        "general_settings": {"custom_auth": "proxy_keys.user_api_key_auth"},
    }


def _start(config: dict[str, Any], folder: Path) -> ProxyProcess:
    env = {"PROXY_KEYS_MORE": json.dumps({"sk-page": PAGE_KEY})}
    return start_proxy(config, tmp_path=folder, env=env, helpers=HELPERS, timeout=90)


@pytest.fixture(name="upstream", scope="module")
def fixture_upstream() -> Iterator[FakeUpstream]:
    with FakeUpstream() as upstream:
        yield upstream


@pytest.fixture(name="proxy", scope="module")
def fixture_proxy(upstream: FakeUpstream, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ProxyProcess]:
    """The guardrail on by default (``default_on: true``)."""
    with _start(_config(upstream, default_on=True), tmp_path_factory.mktemp("guardrail-on")) as proxy:
        yield proxy


def _chat(proxy: ProxyProcess, key: str, **body: Any) -> tuple[int, Any, Any]:
    """A chat request three times the window long, with virtual key ``key``."""
    request = {"model": "m", "messages": agent_session(16, 800), **body}
    return post_chat(proxy, request, headers={"Authorization": f"Bearer {key}"})


def _untouched(upstream: FakeUpstream) -> bool:
    """Whether the provider got the texts of the request's messages as the client sent them."""
    sent = [message.get("content") for message in upstream.requests[-1]["messages"]]
    return sent == [message.get("content") for message in agent_session(16, 800)]


def _events(proxy: ProxyProcess, name: str) -> list[dict[str, Any]]:
    path = proxy.log_path.parent / "structlog.jsonl"
    return [event for event in complete_records(path) if event["event"] == name]


def _row(proxy: ProxyProcess, call_id: str) -> dict[str, Any]:
    """The spend-log row LiteLLM would write for the call ``call_id``."""
    path = proxy.log_path.parent / "rows.jsonl"
    found = wait_for_records(path, lambda rows: any(row["call_id"] == call_id for row in rows), what=call_id)
    return next(row for row in found if row["call_id"] == call_id)


def test_the_pages_registration_is_on_by_default_and_its_key_is_the_opt_outs() -> None:
    """The tests below run the page's config; the opt-out key of ``proxy_keys.py`` names its guardrail."""
    assert GUARDRAIL["litellm_params"]["default_on"] is True
    assert GUARDRAIL["litellm_params"]["guardrail"] == "litellm_budget.BudgetGuardrail"
    assert NAME == "litellm-budget"
    assert PAGE_KEY["metadata"]["litellm_budget"]["window"] > WINDOW


def test_the_readmes_registration_is_the_pages() -> None:
    """The README's short config registers the guardrail these tests run (the page's adds a setting)."""
    (entry,) = yaml.safe_load(block("yaml", "The guardrail form: per key, per team, per request", "guardrail:"))[
        "guardrails"
    ]
    page_params = {key: value for key, value in GUARDRAIL["litellm_params"].items() if key != "policy"}

    assert entry == {**GUARDRAIL, "litellm_params": page_params}


def test_on_by_default_it_fits_and_records_its_work_as_a_guardrail(proxy: ProxyProcess, upstream: FakeUpstream) -> None:
    """A key with no metadata: fitted; the applied-guardrails header and one ``guardrail_information`` say so."""
    upstream.clear()
    status, headers, _ = _chat(proxy, "sk-plain")
    row = _row(proxy, headers["x-litellm-call-id"])

    report = row["spend_logs_metadata"]["litellm_budget"]
    (record,) = row["guardrail_information"]
    assert status == 200
    assert headers["x-litellm-budget-action"] == "trimmed"
    assert NAME in headers["x-litellm-applied-guardrails"].split(",")
    assert not _untouched(upstream)
    assert (record["guardrail_name"], record["guardrail_provider"]) == (NAME, "litellm_budget")
    assert record["guardrail_status"] == "guardrail_intervened"
    assert record["guardrail_response"]["tokens_saved"] == report["tokens_before"] - report["tokens_after"] > 0
    # Counted once by LiteLLM's Usage views: from compression_savings, not again from the guardrail's record.
    assert row["saved"] == report["tokens_before"] - report["tokens_after"]


@pytest.mark.parametrize("key", ["sk-key-out", "sk-opted-out", "sk-team-out"])
def test_a_key_or_team_that_opted_out_is_not_fitted(proxy: ProxyProcess, upstream: FakeUpstream, key: str) -> None:
    """``disable_global_guardrails`` (key or team) or ``opted_out_global_guardrails``: the request goes as it came."""
    upstream.clear()
    status, headers, _ = _chat(proxy, key)
    row = _row(proxy, headers["x-litellm-call-id"])

    assert status == 200
    assert _untouched(upstream)
    assert not [name for name in headers if name.startswith("x-litellm-budget-")]
    assert NAME not in headers.get("x-litellm-applied-guardrails", "")
    assert "litellm_budget" not in (row["spend_logs_metadata"] or {})
    assert not row["guardrail_information"]
    assert row["saved"] == 0


def test_a_keys_opt_out_wins_over_the_requests_ask(proxy: ProxyProcess, upstream: FakeUpstream) -> None:
    """LiteLLM's rule: a default-on guardrail a key disabled stays off, whatever the request's ``guardrails`` says."""
    upstream.clear()
    status, headers, _ = _chat(proxy, "sk-key-out", guardrails=[NAME])

    assert status == 200
    assert _untouched(upstream)
    assert "x-litellm-budget-action" not in headers


@pytest.mark.parametrize(
    ("key", "window", "policy"),
    [("sk-small", "3000", "plan"), ("sk-elide", str(WINDOW), "elide"), ("sk-page", str(WINDOW), "plan")],
    ids=["key-window-team-policy", "key-policy-over-team", "the-pages-key-its-window-only-lowers"],
)
def test_the_settings_of_the_key_and_its_team_apply(
    proxy: ProxyProcess, upstream: FakeUpstream, key: str, window: str, policy: str
) -> None:
    """The team's ``litellm_budget`` over the deployment's, the key's over the team's; ``window`` only lowers."""
    upstream.clear()
    status, headers, _ = _chat(proxy, key)

    assert status == 200
    assert (headers["x-litellm-budget-window"], headers["x-litellm-budget-policy"]) == (window, policy)
    assert int(headers["x-litellm-budget-tokens-after"]) < int(window)


def test_invalid_key_settings_are_left_out_named_once(proxy: ProxyProcess, upstream: FakeUpstream) -> None:
    """A typo, a bad window, a value that is no mapping: fitted with the rest, each logged once with its key."""
    answers = [_chat(proxy, key) for key in ("sk-typo", "sk-typo", "sk-not-a-mapping")]

    invalid = _events(proxy, "settings_invalid")
    assert [(status, headers["x-litellm-budget-action"]) for status, headers, _ in answers] == [(200, "trimmed")] * 3
    assert {headers["x-litellm-budget-window"] for _, headers, _ in answers} == {str(WINDOW)}
    assert {headers["x-litellm-budget-policy"] for _, headers, _ in answers} == {"auto"}
    assert sorted((e["source"], e["key"], e["value"], e["owner"]) for e in invalid) == [
        ("key metadata.litellm_budget", "", "'plan'", "not-a-mapping"),
        ("key metadata.litellm_budget", "polcy", "'plan'", "typo"),
        ("key metadata.litellm_budget", "window", "-5", "typo"),
    ]
    assert not _events(proxy, "hook_failed")


def test_a_request_that_cannot_fit_is_refused_with_its_report(proxy: ProxyProcess, upstream: FakeUpstream) -> None:
    """The guardrail's refusal is the callback's: HTTP 400, LiteLLM's context-window error, the report in it."""
    upstream.clear()
    messages = [{"role": "system", "content": "word " * 8000}, {"role": "user", "content": "hi"}]
    status, _, body = post_chat(
        proxy, {"model": "m", "messages": messages}, headers={"Authorization": "Bearer sk-plain"}
    )

    assert status == 400
    assert body["error"]["provider_specific_fields"]["litellm_budget"]["action"] == "rejected"
    assert upstream.requests == []


@pytest.fixture(name="opt_in", scope="module")
def fixture_opt_in(upstream: FakeUpstream, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ProxyProcess]:
    """The guardrail off by default (``default_on: false``): a request asks for it."""
    with _start(_config(upstream, default_on=False), tmp_path_factory.mktemp("guardrail-opt-in")) as proxy:
        yield proxy


@pytest.mark.parametrize(
    ("key", "body", "fitted"),
    [
        ("sk-plain", {}, False),
        ("sk-plain", {"guardrails": [NAME]}, True),
        ("sk-plain", {"metadata": {"guardrails": [NAME]}}, True),
        ("sk-key-out", {"guardrails": [NAME]}, True),
    ],
    ids=["not-asked", "asked", "asked-in-metadata", "asked-by-a-key-that-opted-out-of-defaults"],
)
def test_off_by_default_it_fits_the_requests_that_ask(
    opt_in: ProxyProcess, upstream: FakeUpstream, key: str, body: dict[str, Any], fitted: bool
) -> None:
    """A request's ``guardrails: [name]`` turns it on; a key's opt-out of default guardrails does not touch it."""
    upstream.clear()
    status, headers, _ = _chat(opt_in, key, **body)

    assert status == 200
    assert (headers.get("x-litellm-budget-action") == "trimmed") is fitted
    assert _untouched(upstream) is not fitted
    assert (NAME in headers.get("x-litellm-applied-guardrails", "")) is fitted


@pytest.mark.parametrize("asked", [False, True], ids=["not-asked", "asked"])
def test_off_by_default_it_fits_a_responses_request_that_asks(
    opt_in: ProxyProcess, upstream: FakeUpstream, asked: bool
) -> None:
    """On ``/v1/responses`` LiteLLM keeps its metadata apart from the client's: the ask is read there too."""
    body = {"model": "m", "input": responses_from_chat(agent_session(16, 800)[1:])}
    upstream.clear()
    status, headers, _ = post_json(
        opt_in,
        "/v1/responses",
        {**body, **({"guardrails": [NAME]} if asked else {})},
        headers={"Authorization": "Bearer sk-plain"},
    )
    row = _row(opt_in, headers["x-litellm-call-id"])

    assert status == 200
    assert (headers.get("x-litellm-budget-action") == "trimmed") is asked
    assert (len(json.dumps(upstream.requests[-1]["input"])) < len(json.dumps(body["input"]))) is asked
    assert (row["saved"] > 0) is asked
    assert bool(row["guardrail_information"]) is asked


@pytest.mark.slow  # tests/adapter/test_guardrail.py runs this refusal through LiteLLM's own loader by default
def test_both_forms_registered_stop_the_proxy_saying_which_line_to_remove(
    upstream: FakeUpstream, tmp_path: Path
) -> None:
    """``callbacks: ["litellm_budget.handler"]`` beside the guardrail: the proxy exits, its last lines say why."""
    config = _config(upstream, default_on=True, callbacks=("litellm_budget.handler",))
    with pytest.raises(ProxyStartError) as failed:
        _start(config, tmp_path)

    assert "litellm_budget is registered twice" in str(failed.value)
    assert 'Remove "litellm_budget.handler" from litellm_settings.callbacks' in str(failed.value)
    assert "StartRefusedError" in (tmp_path / "proxy.log").read_text(encoding="utf-8")


@pytest.mark.slow  # the same refusal path as both forms'; tests/adapter covers each message
def test_a_bad_setting_of_the_guardrail_stops_the_proxy(upstream: FakeUpstream, tmp_path: Path) -> None:
    """``policy: planx`` in the guardrail's ``litellm_params``: the proxy exits, naming it (not started without it)."""
    config = _config(upstream, default_on=True)
    config["guardrails"][0]["litellm_params"]["policy"] = "planx"
    with pytest.raises(ProxyStartError) as failed:
        _start(config, tmp_path)

    assert f"guardrail {NAME!r}: litellm_params.policy = 'planx': must be one of" in str(failed.value)
    assert "starting WITHOUT this guardrail" not in (tmp_path / "proxy.log").read_text(encoding="utf-8")
