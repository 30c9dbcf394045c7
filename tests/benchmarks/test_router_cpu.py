"""``benchmarks/router_cpu.py`` runs as its docstring says and times every hook of each request."""

from __future__ import annotations

import gc
import importlib
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import litellm
import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


@pytest.fixture
def router_cpu(monkeypatch: pytest.MonkeyPatch) -> Iterator[ModuleType]:
    monkeypatch.delenv("HOOK_CPU_FILE", raising=False)
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    monkeypatch.setattr(litellm, "callbacks", [])
    for name in ("router_cpu", "hook_cpu", "load_proxy"):
        sys.modules.pop(name, None)
    module = importlib.import_module("router_cpu")
    yield module
    gc.callbacks.remove(sys.modules["hook_cpu"].TOTALS.collection)
    for name in ("router_cpu", "hook_cpu", "load_proxy"):
        sys.modules.pop(name, None)


def test_each_request_goes_through_every_hook_once(
    router_cpu: ModuleType, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sys, "argv", ["router_cpu.py", "--requests", "4", "--window", "128000"])

    assert router_cpu.main() == 0

    out = capsys.readouterr().out
    calls = dict(re.findall(r"^  (\w+) +[\d.]+ \((\d+)\)$", out, flags=re.MULTILINE))
    assert out.startswith("4 requests, 128,000-token window")
    for hook in ("async_pre_call_hook", "async_filter_deployments", "async_pre_call_deployment_hook"):
        assert calls[hook] == "4"
    assert calls["async_log_success_event"] == "4"
    assert re.search(r"^  all of it, per request: \d+\.\d{4} ms$", out, flags=re.MULTILINE)
    assert out.rstrip().endswith("passed untouched: 4 of 4 requests")
