"""The real agent CLIs, from npm, through the real proxy to a scripted model: every request fits 32k.

Claude Code and Codex CLI (pinned versions from the npm registry, installed once into
``.cache/clis``; skipped when npm or the registry is out of reach) each run a task in which the
fake provider's scripted model (:class:`~tests.support.fake_upstream.AgentScript`) has them run
25 shell commands with large outputs, one per turn, and then answers. Every deployment's window
is 32k tokens, so the history outgrows it after two or three commands and the plugin must fit
each request on the way, in the CLI's own format: Anthropic Messages with streaming, thinking,
``cache_control`` and ``context_management`` for Claude Code; Responses items with ``store:
false`` for Codex.

What the provider received is checked by the provider's own count (:func:`provider_tokens`,
tiktoken over every text, plus the tools' JSON; the fake reports it as ``usage``, so the plugin's
calibration learns it as it would a real provider's): every request fits the window with its
``max_tokens``, every tool result answers a call that is still there, and the CLI finished.
"""

from __future__ import annotations

import functools
import itertools
import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import tiktoken

from litellm_budget.core.counting import load_offline
from tests.support.builders import deployment
from tests.support.fake_upstream import AgentScript, FakeUpstream
from tests.support.jsonl import complete_records, wait_for_records
from tests.support.proxy_process import REPO_ROOT, ProxyProcess, start_proxy

# Slow (20 s on two cores): `make test-slow` runs it, after `make test`, in CI.
pytestmark = [pytest.mark.proxy, pytest.mark.clis, pytest.mark.slow]

CLAUDE_CODE = "@anthropic-ai/claude-code@2.1.197"
CODEX = "@openai/codex@0.171.0"
CLI_CACHE = Path(os.environ.get("LITELLM_BUDGET_CLI_CACHE", REPO_ROOT / ".cache" / "clis"))
WINDOW = 32_000
STEPS = 25
FINAL = f"All {STEPS} commands ran. SCRIPT-COMPLETE"
TASK = "Run the numbered commands the tools give you, one after another, then report."
#: Claude Code's tools for a 32k window: its whole set is 24 tools, ~17k tokens with its system prompt.
CLAUDE_TOOLS = "Bash,Read"
ENCODING = load_offline("o200k_base") or tiktoken.get_encoding("o200k_base")  # LiteLLM ships the file


class Overflow(AssertionError):
    """A request reached the provider bigger than the window: what the plugin exists to prevent."""


@dataclass(frozen=True)
class Clis:
    claude: Path
    codex: Path


@functools.cache
def _install_clis() -> Clis | str:
    """Both CLIs from npm into CLI_CACHE, once per pinned version pair; or why that cannot be done here."""
    npm = shutil.which("npm")
    if npm is None:
        return "npm is not installed: the real CLIs come from the npm registry"
    wanted = f"{CLAUDE_CODE} {CODEX}"
    bins = CLI_CACHE / "node_modules" / ".bin"
    clis = Clis(claude=bins / "claude", codex=bins / "codex")
    stamp = CLI_CACHE / "installed.txt"
    if not (stamp.is_file() and stamp.read_text() == wanted and clis.claude.exists() and clis.codex.exists()):
        CLI_CACHE.mkdir(parents=True, exist_ok=True)
        command = [npm, "install", "--prefix", str(CLI_CACHE), "--no-audit", "--no-fund", "--no-save", *wanted.split()]
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=300, check=False)
        except subprocess.TimeoutExpired:
            return f"npm install {wanted} took over 5 minutes"
        if done.returncode != 0:
            errors = [line for line in done.stderr.splitlines() if line.startswith("npm error")][:4]
            return f"npm install {wanted} failed ({done.returncode}): {' | '.join(errors) or done.stderr[-400:]}"
        stamp.write_text(wanted)
    home = CLI_CACHE / "home"  # what the CLIs write at start-up goes there, not to the caller's home
    home.mkdir(exist_ok=True)
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home), "CODEX_HOME": str(home / "codex")}
    for binary in (clis.claude, clis.codex):
        version = subprocess.run(
            [binary, "--version"], env=env, capture_output=True, text=True, timeout=60, check=False
        )
        if version.returncode != 0:
            return f"{binary} does not run here: {(version.stderr or version.stdout).strip()[-400:]}"
    return clis


@pytest.fixture(name="clis", scope="session")
def fixture_clis() -> Clis:
    clis = _install_clis()
    if isinstance(clis, str):
        pytest.skip(clis)
    return clis


def _texts(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _texts(item)
    elif isinstance(value, list):
        for item in value:
            yield from _texts(item)


def provider_tokens(body: dict[str, Any]) -> int:
    """The fake provider's count of a request's prompt: every text in it, plus the tools' JSON.

    Deliberately not the plugin's counter: the strings of system, messages, instructions and
    input items (texts, tool inputs and results, ids), and the tools as the JSON they are sent as.
    """
    parts = [body.get(key) for key in ("system", "messages", "instructions", "input")]
    texts = sum(len(ENCODING.encode(text, disallowed_special=())) for text in _texts(parts))
    tools = json.dumps(body.get("tools") or [], ensure_ascii=False)
    return texts + len(ENCODING.encode(tools, disallowed_special=()))


@pytest.fixture(name="upstream", scope="module")
def fixture_upstream() -> Iterator[FakeUpstream]:
    script = AgentScript(steps=STEPS, command="seq 1 4000", final_text=FINAL)
    with FakeUpstream(script=script, prompt_counter=provider_tokens) as upstream:
        yield upstream


@pytest.fixture(name="proxy", scope="module")
def fixture_proxy(
    clis: Clis, upstream: FakeUpstream, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ProxyProcess]:
    folder = tmp_path_factory.mktemp("clis")
    config = {
        "model_list": [  # each served under the name its CLI asks for
            deployment("claude-sonnet-4-5", "anthropic/claude-sonnet-4-5", upstream.root_url, window=WINDOW),
            # Claude Code's default model
            deployment("claude-opus-4-8", "anthropic/claude-opus-4-8", upstream.root_url, window=WINDOW),
            deployment("gpt-5.5", "openai/gpt-5.5", upstream.base_url, window=WINDOW),  # Codex's default model
        ],
        "litellm_settings": {"callbacks": ["litellm_budget.handler", "proxy_structlog.configured"]},
    }
    with start_proxy(config, tmp_path=folder, helpers=["proxy_structlog.py"]) as proxy:
        yield proxy


def _cli_env(tmp_path: Path) -> dict[str, str]:
    """A bare environment: nothing of the caller's (no real API keys, no user config), loopback only."""
    home = tmp_path / "home"
    home.mkdir()
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "TERM": "dumb",
        "LANG": "C.UTF-8",
        "NO_PROXY": "127.0.0.1,localhost",
        "no_proxy": "127.0.0.1,localhost",
    }


def _run(command: list[str], env: dict[str, str], tmp_path: Path) -> subprocess.CompletedProcess[str]:
    work = tmp_path / "work"
    work.mkdir()
    return subprocess.run(
        command, cwd=work, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=300, check=False
    )


def run_claude_code(
    clis: Clis, proxy: ProxyProcess, model: str, tmp_path: Path, *, tools: str | None
) -> subprocess.CompletedProcess[str]:
    """``claude -p TASK`` against the proxy; ``tools`` None keeps Claude Code's whole tool set."""
    env = _cli_env(tmp_path) | {
        "ANTHROPIC_BASE_URL": proxy.base_url,
        "ANTHROPIC_API_KEY": proxy.master_key,
        "ANTHROPIC_SMALL_FAST_MODEL": model,
        "ANTHROPIC_DEFAULT_HAIKU_MODEL": model,
        "IS_SANDBOX": "1",  # root may skip permissions only in a sandbox
        "DISABLE_TELEMETRY": "1",
        "DISABLE_AUTOUPDATER": "1",
        "DISABLE_ERROR_REPORTING": "1",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    }
    command = [str(clis.claude), "-p", TASK, "--model", model, "--output-format", "json"]
    command += ["--dangerously-skip-permissions", "--no-session-persistence"]
    if tools is not None:
        command += ["--tools", tools]
    return _run(command, env, tmp_path)


def run_codex(
    clis: Clis, proxy: ProxyProcess, model: str, tmp_path: Path
) -> tuple[subprocess.CompletedProcess[str], str]:
    """``codex exec TASK`` against the proxy as a Responses provider; returns the run and its last message."""
    codex_home = tmp_path / "codex"
    codex_home.mkdir()
    (codex_home / "config.toml").write_text(
        f'model = "{model}"\n'
        'model_provider = "litellm"\n'
        "[model_providers.litellm]\n"
        'name = "LiteLLM proxy"\n'
        f'base_url = "{proxy.base_url}/v1"\n'
        'env_key = "LITELLM_PROXY_KEY"\n'
        'wire_api = "responses"\n',
        encoding="utf-8",
    )
    env = _cli_env(tmp_path) | {"CODEX_HOME": str(codex_home), "LITELLM_PROXY_KEY": proxy.master_key}
    last = tmp_path / "last-message.txt"
    command = [str(clis.codex), "exec", "--skip-git-repo-check", "--ephemeral", "--color", "never"]
    command += ["--dangerously-bypass-approvals-and-sandbox", "--output-last-message", str(last), TASK]
    done = _run(command, env, tmp_path)
    return done, last.read_text(encoding="utf-8").strip() if last.exists() else ""


# -- what the provider received --------------------------------------------------------------


def anthropic_problems(messages: list[dict[str, Any]]) -> list[str]:
    """What the Messages API would refuse: alternation, and tool pairs (system-role messages aside).

    Claude Code sends ``system``-role messages inside ``messages`` itself on models with the
    ``mid-conversation-system`` beta; the plugin's own words must never be one.
    """
    problems: list[str] = []
    turns = [message for message in messages if message.get("role") != "system"]
    for message in messages:
        if message.get("role") == "system" and "litellm_budget" in json.dumps(message):
            problems.append("the plugin's words in a system-role message")
    if not turns or turns[0].get("role") != "user":
        problems.append("does not start with a user message")
    for before, after in itertools.pairwise(turns):
        if before.get("role") == after.get("role"):
            problems.append(f"two {after.get('role')} messages in a row")
    for index, message in enumerate(turns):
        blocks = [block for block in message.get("content") or [] if isinstance(block, dict)]
        results = {block["tool_use_id"] for block in blocks if block.get("type") == "tool_result"}
        previous = turns[index - 1].get("content") if index else None
        calls = {block["id"] for block in previous or [] if isinstance(block, dict) and block.get("type") == "tool_use"}
        if results - calls:
            problems.append(
                f"message {index}: tool_result without its tool_use right before: {sorted(results - calls)}"
            )
        if message.get("role") == "assistant" and index + 1 < len(turns):
            uses = {block["id"] for block in blocks if block.get("type") == "tool_use"}
            answered = {
                block.get("tool_use_id") for block in turns[index + 1].get("content") or [] if isinstance(block, dict)
            }
            if uses - answered:
                problems.append(f"message {index}: tool_use not answered right after: {sorted(uses - answered)}")
    return problems


def responses_problems(items: list[dict[str, Any]]) -> list[str]:
    """What the Responses API would refuse: an output without its call before it, a call never answered."""
    problems: list[str] = []
    calls: set[str] = set()
    outputs: set[str] = set()
    for index, item in enumerate(items):
        kind = item.get("type")
        if kind in {"function_call_output", "custom_tool_call_output"}:
            if item.get("call_id") not in calls:
                problems.append(f"item {index}: {kind} without its call before it: {item.get('call_id')}")
            outputs.add(item.get("call_id", ""))
        elif kind in {"function_call", "custom_tool_call"}:
            calls.add(item.get("call_id", ""))
    if calls - outputs:
        problems.append(f"calls never answered: {sorted(calls - outputs)}")
    return problems


def assert_fits(bodies: list[dict[str, Any]], room_for: str) -> list[int]:
    """Every request fits the window with its answer's room (``room_for``: the max-tokens field); the sizes."""
    sizes = [provider_tokens(body) for body in bodies]
    over = [
        f"request {index}: {size} + {room_for} {body.get(room_for) or 0} tokens"
        for index, (body, size) in enumerate(zip(bodies, sizes, strict=True))
        if size + (body.get(room_for) or 0) > WINDOW
    ]
    if over:
        raise Overflow(f"{len(over)} of {len(bodies)} requests over the {WINDOW}-token window: {over}")
    return sizes


def _structlog(proxy: ProxyProcess) -> Path:
    return proxy.config_path.parent / "structlog.jsonl"


def reports(proxy: ProxyProcess, model: str, count: int, *, since: int) -> list[dict[str, Any]]:
    """The plugin's report (its structlog event) of each of ``count`` requests to ``model``, in order.

    ``since``: how many records the log had before the run (:func:`complete_records`).
    """

    def of_model(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
        ours = [r for r in records[since:] if r.get("model_group") == model and "action" in r]
        latest = {r["litellm_call_id"]: r for r in ours}
        return list(latest.values())

    ready = wait_for_records(_structlog(proxy), lambda records: len(of_model(records)) >= count, what="reports")
    return of_model(ready)


def _upstream_bodies(upstream: FakeUpstream, suffix: str) -> list[dict[str, Any]]:
    return [record["body"] for record in upstream.records if record["path"].endswith(suffix)]


def _failure(done: subprocess.CompletedProcess[str]) -> str:
    return f"exit {done.returncode}\nstdout: {done.stdout[-2000:]}\nstderr: {done.stderr[-2000:]}"


# -- the CLIs ---------------------------------------------------------------------------------

MID_CONVERSATION_SYSTEM = (
    "Claude Code 2.1.197 with its whole tool set sends role 'system' messages inside `messages` (its Agent "
    "tool's listing, later reminders; beta mid-conversation-system-2026-04-07) on every model but its older "
    "ones, its default claude-opus-4-8 included; the plugin reports such a request `unsupported` and forwards "
    "it untouched (max_tokens 64000 too): 26 of 26 requests untouched, up to ~296k tokens "
    "(/tmp/issue9_findings/README.md)"
)


def check_messages_requests(bodies: list[dict[str, Any]]) -> None:
    """Alternation, tool pairs, and the thinking rule, in every Messages request the provider received."""
    for index, body in enumerate(bodies):
        assert anthropic_problems(body["messages"]) == [], f"request {index}"
        thinking = body.get("thinking") or {}
        if thinking.get("type") == "enabled":  # the Messages API refuses budget_tokens >= max_tokens
            assert 1024 <= thinking["budget_tokens"] < body["max_tokens"], f"request {index}: {thinking}"


def summary(what: str, bodies: list[dict[str, Any]], room_for: str, actions: list[str]) -> str:
    """One line of numbers for the test's captured output (``pytest -rA``)."""
    sizes = [provider_tokens(body) for body in bodies]
    rooms = [body.get(room_for) or 0 for body in bodies]
    return (
        f"{what}: {len(bodies)} requests upstream, largest {max(sizes, default=0)} tokens, largest with "
        f"{room_for} {max(map(sum, zip(sizes, rooms, strict=True)), default=0)}; plugin: "
        + ", ".join(f"{actions.count(action)} {action}" for action in sorted(set(actions)))
    )


@pytest.mark.parametrize("model", ["claude-sonnet-4-5", "claude-opus-4-8"])
def test_claude_code_runs_its_task_with_every_request_fitted(
    clis: Clis, proxy: ProxyProcess, upstream: FakeUpstream, tmp_path: Path, model: str
) -> None:
    """25 commands of ~11k tokens each through /v1/messages: Claude Code finishes, no request overflows."""
    upstream.clear()
    since = len(complete_records(_structlog(proxy)))

    done = run_claude_code(clis, proxy, model, tmp_path, tools=CLAUDE_TOOLS)
    bodies = _upstream_bodies(upstream, "/messages")

    assert done.returncode == 0, _failure(done)
    answer = json.loads(done.stdout)
    assert (answer["is_error"], answer["result"]) == (False, FINAL)
    assert len(bodies) >= STEPS + 1  # one request per command, and the one answered with the final text
    check_messages_requests(bodies)
    assert_fits(bodies, "max_tokens")
    actions = [report["action"] for report in reports(proxy, model, len(bodies), since=since)]
    print(summary(f"Claude Code, {model}, --tools {CLAUDE_TOOLS}", bodies, "max_tokens", actions))
    assert actions.count("trimmed") >= STEPS - 5, actions


@pytest.mark.parametrize(
    "model",
    [
        "claude-sonnet-4-5",
        "claude-opus-4-8",
    ],
)
def test_claude_code_with_its_whole_tool_set_never_overflows(
    clis: Clis, proxy: ProxyProcess, upstream: FakeUpstream, tmp_path: Path, model: str
) -> None:
    """Its 24 tools leave little of a 32k window: Claude Code finishes, or is refused with the reason; no overflow."""
    upstream.clear()
    since = len(complete_records(_structlog(proxy)))

    done = run_claude_code(clis, proxy, model, tmp_path, tools=None)
    answer = json.loads(done.stdout)
    bodies = _upstream_bodies(upstream, "/messages")

    if done.returncode == 0:
        assert answer["result"] == FINAL
    else:
        assert answer["is_error"], _failure(done)
        assert "context window" in answer["result"], answer["result"]
    check_messages_requests(bodies)
    actions = [report["action"] for report in reports(proxy, model, max(len(bodies), 1), since=since)]
    print(summary(f"Claude Code, {model}, all tools", bodies, "max_tokens", actions))
    assert_fits(bodies, "max_tokens")


def test_codex_runs_its_task_with_every_request_fitted(
    clis: Clis, proxy: ProxyProcess, upstream: FakeUpstream, tmp_path: Path
) -> None:
    """25 commands of ~11k tokens each through /v1/responses (streamed): Codex finishes, no request overflows."""
    upstream.clear()
    since = len(complete_records(_structlog(proxy)))

    done, last_message = run_codex(clis, proxy, "gpt-5.5", tmp_path)
    bodies = _upstream_bodies(upstream, "/responses")

    assert done.returncode == 0, _failure(done)
    assert last_message == FINAL
    assert FINAL in done.stdout
    assert len(bodies) >= STEPS + 1
    for index, body in enumerate(bodies):
        assert body["stream"] is True
        assert responses_problems(body["input"]) == [], f"request {index}"
    assert_fits(bodies, "max_output_tokens")
    actions = [report["action"] for report in reports(proxy, "gpt-5.5", len(bodies), since=since)]
    print(summary("Codex, gpt-5.5", bodies, "max_output_tokens", actions))
    assert actions.count("trimmed") >= STEPS - 5, actions


def test_the_checks_catch_what_the_apis_refuse() -> None:
    """The checks above fail on what they exist to catch (no CLI needed)."""
    use = {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {}}]}
    result = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "x"}]}
    go = {"role": "user", "content": "go"}
    marker = {"role": "system", "content": "[litellm_budget: 3 earlier messages were omitted]"}
    call = {"type": "function_call", "call_id": "c1", "name": "exec_command", "arguments": "{}"}
    output = {"type": "function_call_output", "call_id": "c1", "output": "x"}

    assert anthropic_problems([go, use, result]) == []
    assert anthropic_problems([go, {"role": "system", "content": "Agents: ..."}, use, result]) == []
    assert anthropic_problems([go, result])  # a result whose call was dropped
    assert anthropic_problems([go, use, go])  # a call never answered
    assert anthropic_problems([use, result])  # starts with the assistant
    assert anthropic_problems([go, go])  # two user messages in a row
    assert anthropic_problems([go, marker, use, result])  # the plugin's words as a system message
    assert responses_problems([call, output]) == []
    assert responses_problems([output])
    assert responses_problems([call])
    with pytest.raises(Overflow):
        assert_fits([{"messages": [go], "max_tokens": WINDOW}], "max_tokens")
