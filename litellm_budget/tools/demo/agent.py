"""A built-in coding-agent session, generated deterministically, for the demo and quick trials."""

from __future__ import annotations

import random
from typing import Any

_WORDS = tuple(
    "def class return import self value result config request message token window budget test assert "
    "error raise None True False for while in if else elif with open path file line data list dict str int".split()
)
_FILES = ("src/budget.py", "src/window.py", "src/report.py", "tests/test_budget.py", "README.md", "setup.cfg")


def demo_session(steps: int = 40, seed: int = 7) -> list[dict[str, Any]]:
    """A system prompt, a task, then ``steps`` bash steps with realistic outputs of very different sizes."""
    rng = random.Random(seed)  # noqa: S311 - reproducible sample text, not security
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "You are a coding agent. Use the bash tool. Think before each step."},
        {"role": "user", "content": "The test suite fails after the last refactor. Find the cause and fix it."},
    ]
    for step in range(steps):
        command, output = _step(rng, step)
        call_id = f"call_{step:04d}"
        call = {
            "id": call_id,
            "type": "function",
            "function": {"name": "bash", "arguments": f'{{"command": "{command}"}}'},
        }
        messages.append(
            {"role": "assistant", "content": f"Step {step}: {command} to learn more.", "tool_calls": [call]}
        )
        messages.append({"role": "tool", "tool_call_id": call_id, "content": output})
        if step % 15 == 14:
            messages.append({"role": "user", "content": "Keep going; remember to run the whole suite at the end."})
            messages.append({"role": "assistant", "content": "Understood, continuing."})
    return messages


def _step(rng: random.Random, step: int) -> tuple[str, str]:
    kind = rng.choice(["ls", "cat", "pytest", "grep"])
    path = rng.choice(_FILES)
    if kind == "ls":
        return "ls -la src tests", "\n".join(f"-rw-r--r-- 1 dev dev {rng.randint(100, 9999):5d} {f}" for f in _FILES)
    if kind == "cat":
        return f"cat {path}", "\n".join(_code_line(rng, n) for n in range(rng.randint(40, 400)))
    if kind == "pytest":
        failures = "\n".join(
            f"FAILED tests/test_budget.py::test_{n} - AssertionError: {_words(rng, 8)}"
            for n in range(rng.randint(3, 60))
        )
        totals = f"{rng.randint(1, 60)} failed, {rng.randint(50, 300)} passed in {step + 1}.2s"
        return "pytest -x -q", f"{failures}\n{totals}"
    return f"grep -rn budget {path}", "\n".join(f"{path}:{n}: {_words(rng, 10)}" for n in range(rng.randint(2, 30)))


def _code_line(rng: random.Random, number: int) -> str:
    return f"{number:4d}    {'    ' * rng.randint(0, 3)}{_words(rng, rng.randint(3, 12))}"


def _words(rng: random.Random, count: int) -> str:
    return " ".join(rng.choice(_WORDS) for _ in range(count))
