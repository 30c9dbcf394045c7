"""``benchmarks/hook_cpu.py``: the timing handler ``load_proxy.py --hook-cpu`` puts in the proxy counts what it says."""

from __future__ import annotations

import gc
import importlib
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest
from litellm.types.utils import CallTypes

from tests.support.builders import agent_session, deployment_kwargs

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


@pytest.fixture
def hook_cpu(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[ModuleType]:
    monkeypatch.setenv("HOOK_CPU_FILE", str(tmp_path / "totals.json"))
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    sys.modules.pop("hook_cpu", None)
    module = importlib.import_module("hook_cpu")
    monkeypatch.setattr(module, "WRITE_EVERY", 1)
    yield module
    gc.callbacks.remove(module.TOTALS.collection)
    sys.modules.pop("hook_cpu", None)


@pytest.mark.asyncio
async def test_hooks_and_later_counts_are_timed_and_written(hook_cpu: ModuleType, tmp_path: Path) -> None:
    """A trimmed request times its hook; a passed one also its count on the loop's next turn, not twice."""
    budget = hook_cpu.TimedBudget()
    messages = agent_session(30, 3000)

    await budget.async_pre_call_deployment_hook(deployment_kwargs(messages, 16_000, "trimmed"), CallTypes.acompletion)
    await budget.async_pre_call_deployment_hook(
        deployment_kwargs(messages[:4], 128_000, "passed"), CallTypes.acompletion
    )
    assert len(budget._memory.later) == 1  # the gate passed it uncounted
    budget._memory.later.settle()  # as the loop's next turn would

    totals = json.loads((tmp_path / "totals.json").read_text())
    assert totals["async_pre_call_deployment_hook"]["calls"] == 2
    assert totals["later_count"]["calls"] == 1
    assert all(entry["seconds"] >= 0 for entry in totals.values())
    assert len(budget._memory.later) == 0


def test_a_collection_inside_a_timed_call_is_added_up_apart(hook_cpu: ModuleType) -> None:
    """The proxy's garbage collections that land in a timed call are counted apart; those outside are not."""
    totals = hook_cpu.TOTALS
    gc.collect()
    assert hook_cpu.COLLECTIONS not in totals.calls

    totals.timing += 1
    try:
        gc.collect()
    finally:
        totals.timing -= 1

    assert totals.calls[hook_cpu.COLLECTIONS] == 1
    assert totals.seconds[hook_cpu.COLLECTIONS] > 0
