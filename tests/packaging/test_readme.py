"""The configs, commands and code blocks of the README and its docs/ pages run as written, so they cannot drift.

Each block is taken from its page (README.md, or a page of docs/) by its section and a string it
contains. The proxy quick start runs byte for byte in the real proxy: its `export` lines run in
bash as written, and LiteLLM reads the provider's address and key from OPENAI_BASE_URL /
OPENAI_API_KEY, so pointing it at the local fake provider changes no line. The Python blocks run
in a fresh interpreter; the only additions are the names the README says are the reader's own
(`history`, `messages`) and the local proxy's port in place of 4000.
"""

from __future__ import annotations

import ast
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
import yaml

from litellm_budget import BudgetSettings
from litellm_budget.core.wording import NOTICE_PREFIX
from tests.support import docs
from tests.support.builders import agent_session, tokens_of
from tests.support.docs import block
from tests.support.fake_upstream import FakeUpstream
from tests.support.paths import DOCS, README, REPO_ROOT
from tests.support.proxy_process import ProxyProcess, post_chat, start_proxy

#: The page that holds the report, its structlog configuration and the Prometheus section.
REPORTS = DOCS / "reports.md"
#: Where the README's commands find the proxy: `litellm --config config.yaml` listens on port 4000.
README_PROXY = "http://127.0.0.1:4000"

#: Runs README blocks one after the other in one namespace, as `python -m asyncio` would (a
#: top-level `await` is allowed); argv: a JSON file of the reader's own names, then the blocks.
RUNNER = """
import ast, asyncio, json, sys

with open(sys.argv[1], encoding="utf-8") as names:
    namespace = {"__name__": "__main__", **json.load(names)}
for path in sys.argv[2:]:
    with open(path, encoding="utf-8") as block:
        code = compile(block.read(), path, "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
    pending = eval(code, namespace)
    if pending is not None:
        asyncio.run(pending)
"""


def offline_env(**extra: str) -> dict[str, str]:
    """Our environment, the model map from the wheel, loopback never through an HTTP proxy."""
    no_proxy = ",".join(p for p in (os.environ.get("NO_PROXY"), "127.0.0.1,localhost") if p)
    return {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "NO_PROXY": no_proxy, "no_proxy": no_proxy, **extra}


def provider_env(upstream: FakeUpstream) -> dict[str, str]:
    """Where LiteLLM sends `openai/...` models when the config names no api_base or api_key."""
    return {"OPENAI_BASE_URL": upstream.base_url, "OPENAI_API_BASE": upstream.base_url, "OPENAI_API_KEY": "sk-upstream"}


def run_blocks(
    tmp_path: Path, sources: list[str], names: dict[str, Any], env: dict[str, str]
) -> subprocess.CompletedProcess[str]:
    """Run README blocks in a fresh interpreter, outside the clone; fail with its stderr if it fails."""
    (tmp_path / "names.json").write_text(json.dumps(names), encoding="utf-8")
    paths = []
    for number, source in enumerate(sources):
        path = tmp_path / f"readme_block_{number}.py"
        path.write_text(source, encoding="utf-8")
        paths.append(str(path))
    done = subprocess.run(
        [sys.executable, "-c", RUNNER, str(tmp_path / "names.json"), *paths],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done


def exported_by_readme() -> dict[str, str]:
    """Run the quick start's `export` lines as written, in bash, and return what they exported."""
    commands = block("sh", "Quick start: proxy", "litellm --config").splitlines()
    assert "litellm --config config.yaml" in [line.split("#")[0].strip() for line in commands]
    exports = [line for line in commands if line.startswith("export ")]
    names = [re.match(r"export (\w+)=", line).group(1) for line in exports]  # type: ignore[union-attr]
    show = "import json, os, sys; print(json.dumps({n: os.environ[n] for n in sys.argv[1:]}))"
    printed = shlex.join([sys.executable, "-c", show, *names])
    done = subprocess.run(
        ["bash", "-c", "\n".join([*exports, printed])],
        env={key: value for key, value in os.environ.items() if key not in names},
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    exported: dict[str, str] = json.loads(done.stdout)
    return exported


def master_key_from_readme() -> str:
    """The key the quick start's `export LITELLM_MASTER_KEY=...` line makes, run as written."""
    return exported_by_readme()["LITELLM_MASTER_KEY"]


def quick_start_config() -> str:
    return block("yaml", "Quick start: proxy", "# config.yaml")


def started(
    config: str | dict[str, Any], upstream: FakeUpstream, tmp_path: Path, exported: dict[str, str]
) -> ProxyProcess:
    """The real proxy with ``config`` (text is written byte for byte, a dict as YAML), with the quick start's
    exports, the provider's key among them pointed at the local fake provider."""
    if isinstance(config, str):
        (tmp_path / "config.yaml").write_text(config, encoding="utf-8")
    source = tmp_path / "config.yaml" if isinstance(config, str) else config
    return start_proxy(source, tmp_path=tmp_path, env={**exported, **provider_env(upstream)})


@pytest.mark.proxy
def test_proxy_quick_start_runs_as_written(upstream: FakeUpstream, tmp_path: Path) -> None:
    """The quick start's config, key command and client snippet give a fitted answer through the real proxy."""
    config = quick_start_config()
    assert yaml.safe_load(config)["general_settings"]["master_key"] == "os.environ/LITELLM_MASTER_KEY"
    window = yaml.safe_load(config)["model_list"][0]["model_info"]["max_input_tokens"]
    exported = exported_by_readme()
    key = exported["LITELLM_MASTER_KEY"]
    assert key.startswith("sk-")
    assert len(key) > 40
    assert exported["LITELLM_LOCAL_MODEL_COST_MAP"] == "True"
    assert set(exported) == {"LITELLM_LOCAL_MODEL_COST_MAP", "OPENAI_API_KEY", "LITELLM_MASTER_KEY"}
    upstream.clear()

    with started(config, upstream, tmp_path, exported) as proxy:
        assert proxy.master_key == key
        with openai.OpenAI(
            base_url=proxy.base_url + "/v1", api_key=key, http_client=openai.DefaultHttpxClient(trust_env=False)
        ) as client:
            raw = client.chat.completions.with_raw_response.create(
                model="agent-model", messages=[{"role": "user", "content": "Hello"}]
            )
            with pytest.raises(openai.BadRequestError, match="No connected db"):  # another key: a virtual key
                client.chat.completions.create(
                    model="agent-model", messages=[{"role": "user", "content": "Hello"}], extra_headers=bad_key()
                )
        snippet = block("python", "Quick start: proxy", "openai.OpenAI(")
        assert snippet.count(README_PROXY) == 1
        printed = run_blocks(
            tmp_path, [snippet.replace(README_PROXY, proxy.base_url)], {}, offline_env(LITELLM_MASTER_KEY=key)
        )

    assert raw.headers["x-litellm-budget-action"] == "passthrough"
    assert raw.headers["x-litellm-budget-window"] == str(window)
    assert raw.parse().choices[0].finish_reason == "stop"
    assert [body["model"] for body in upstream.requests] == ["gpt-4o", "gpt-4o"]
    assert printed.stdout.strip() == "passthrough"


def bad_key() -> dict[str, str]:
    return {"Authorization": "Bearer sk-not-the-master-key-0123456789abcdef"}


@pytest.mark.proxy
def test_prometheus_section_runs_as_written(upstream: FakeUpstream, tmp_path: Path) -> None:
    """With the Prometheus section's callbacks, its curl command prints exactly the output the page shows."""
    config = yaml.safe_load(quick_start_config())
    callbacks = yaml.safe_load(block("yaml", "Prometheus", "callbacks", page=REPORTS))
    assert callbacks == {"litellm_settings": {"callbacks": ["litellm_budget.handler", "prometheus"]}}
    config["litellm_settings"].update(callbacks["litellm_settings"])
    command = block("sh", "Prometheus", "curl", page=REPORTS).strip()
    assert command.count(README_PROXY + "/metrics/") == 1
    exported = exported_by_readme()
    key = exported["LITELLM_MASTER_KEY"]

    with started(config, upstream, tmp_path, exported) as proxy:
        status, headers, _ = post_chat(proxy, {"model": "agent-model", "messages": [{"role": "user", "content": "Hi"}]})
        with httpx.Client(base_url=proxy.base_url, trust_env=False) as client:
            anonymous = client.get("/metrics/")
            redirect = client.get("/metrics", headers=proxy.auth_headers)
        shown = run_shell(command.replace(README_PROXY, proxy.base_url), key)

    assert status == 200
    assert headers["x-litellm-budget-action"] == "passthrough"
    assert anonymous.status_code == 401
    assert redirect.status_code == 307
    assert redirect.headers["location"].endswith("/metrics/")
    assert shown == block("text", "Prometheus", "litellm_budget_", page=REPORTS).splitlines()


def run_shell(command: str, key: str) -> list[str]:
    """The output lines of the README's `curl ... | grep ...` command, with the proxy's key exported."""
    if shutil.which("curl"):
        done = subprocess.run(
            ["bash", "-o", "pipefail", "-c", command],
            env=offline_env(LITELLM_MASTER_KEY=key),
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        )
        return done.stdout.splitlines()
    # No curl on this machine: the same request (bearer key, redirects followed) and the same filter.
    url = re.search(r"http://\S+", command)
    pattern = re.search(r"grep '([^']+)'", command)
    assert url is not None
    assert pattern is not None
    with httpx.Client(trust_env=False, follow_redirects=True) as client:
        body = client.get(url.group(0), headers={"Authorization": f"Bearer {key}"}).raise_for_status().text
    return [line for line in body.splitlines() if re.search(pattern.group(1), line)]


@pytest.mark.subprocess
def test_async_sdk_snippet_fits_before_the_provider(upstream: FakeUpstream, tmp_path: Path) -> None:
    """The SDK quick start, given a `history` over gpt-4o's window, sends the provider a fitted request."""
    history = agent_session(150, 900)
    assert tokens_of(history) > 128_000
    snippet = block("python", "Quick start: SDK", "ContextBudget()")
    probe = "print(type(response).__name__)"
    upstream.clear()

    done = run_blocks(tmp_path, [snippet, probe], {"history": history}, offline_env(**provider_env(upstream)))

    assert done.stdout.splitlines()[-1] == "ModelResponse"
    (sent,) = upstream.requests
    assert tokens_of(sent["messages"]) < 128_000
    assert any(NOTICE_PREFIX in str(message["content"]) for message in sent["messages"])


@pytest.mark.subprocess
def test_sync_fit_snippet_sends_the_fitted_messages(upstream: FakeUpstream, tmp_path: Path) -> None:
    """The fit() snippet trims `messages`, sends the fitted request and prints its report."""
    messages = agent_session(150, 900)
    snippet = block("python", "Quick start: SDK", "fit(messages")
    upstream.clear()

    done = run_blocks(tmp_path, [snippet], {"messages": messages}, offline_env(**provider_env(upstream)))

    report = ast.literal_eval(done.stdout.splitlines()[-1])
    (sent,) = upstream.requests
    assert report["action"] == "trimmed"
    assert report["tokens_after"] < report["tokens_before"]
    assert len(sent["messages"]) == report["messages_after"]
    assert tokens_of(sent["messages"], "gpt-4o-mini") < 128_000
    assert sent["max_tokens"] == 1000


@pytest.mark.subprocess
def test_structlog_snippet_prints_the_report_as_json_lines(upstream: FakeUpstream, tmp_path: Path) -> None:
    """With the reports page's structlog configuration, the SDK quick start logs one JSON line for its trimmed
    request, with every field the page's example shows."""
    configure = block("python", "The report", "structlog.configure", page=REPORTS)
    snippet = block("python", "Quick start: SDK", "ContextBudget()")

    done = run_blocks(
        tmp_path, [configure, snippet], {"history": agent_session(150, 900)}, offline_env(**provider_env(upstream))
    )

    events = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    assert [event["event"] for event in events] == ["request_trimmed"]
    assert events[0]["level"] == "info"
    assert "timestamp" in events[0]
    assert events[0]["tokens_after"] < events[0]["tokens_before"]
    example = json.loads(block("json", "The report", '"event": "request_trimmed"', page=REPORTS))
    assert set(example) <= set(events[0])


def test_per_model_settings_block_is_accepted() -> None:
    """The Configuration section's per-model YAML is a valid window and valid settings."""
    model_info = yaml.safe_load(block("yaml", "Configuration", "litellm_budget"))["model_info"]

    settings = BudgetSettings().updated(model_info["litellm_budget"])

    assert isinstance(model_info["max_input_tokens"], int)
    assert {key: getattr(settings, key) for key in model_info["litellm_budget"]} == model_info["litellm_budget"]


def test_every_make_target_in_the_readme_exists() -> None:
    """Each `make X` the README and its pages show is a target of the Makefile; the README shows the two commands."""
    targets = set(re.findall(r"^([\w-]+):", (REPO_ROOT / "Makefile").read_text(encoding="utf-8"), re.MULTILINE))
    named = {c.key.split()[1] for c in docs.commands() if c.key.startswith("make ")}
    in_readme = {c.key.split()[1] for c in docs.commands(README) if c.key.startswith("make ")}

    assert in_readme == {"demo", "test"}
    assert {"demo", "test", "wheel"} <= named
    assert named <= targets
