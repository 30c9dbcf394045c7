"""
Agent sessions made for this repository's tests, in the shapes real agents send: a shell agent
that reads, greps, edits with heredocs and runs tests; a function-calling agent with short JSON
results and many turns; an editor-tool agent; a plain chat. Deterministic (seeded), so the files
in ``examples/sessions`` are what ``python -m tests.support.made_sessions`` writes, and the
equivalence and invariant tests run in any clone (``../shared/sessions`` is the larger set CI has).
It writes ``examples/request.json`` too: one request of the shell agent, the docs' ``inspect`` example.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

from .paths import MADE_DIR, MADE_REQUEST

_WORDS = (
    "value result config parser request handler buffer token window index cache query model field "
    "option record entry table column filter lookup alias join limit offset order group count"
).split()
_MODULES = ("core/query.py", "core/fields.py", "db/backend.py", "utils/text.py", "cli/main.py", "api/views.py")

Message = dict[str, Any]


def _words(rng: random.Random, count: int) -> str:
    return " ".join(rng.choice(_WORDS) for _ in range(count))


def _identifier(rng: random.Random) -> str:
    return f"{rng.choice(_WORDS)}_{rng.choice(_WORDS)}"


def _source(rng: random.Random, path: str, lines: int, *, numbered: int | None = None) -> str:
    """A Python file's text: classes, methods, assignments with identifiers, a few comments."""
    out: list[str] = [f'"""The {path} module: {_words(rng, 8)}."""', "", "import os", "import re", ""]
    while len(out) < lines:
        out.append(f"class {rng.choice(_WORDS).title()}{rng.choice(_WORDS).title()}:")
        for _ in range(rng.randint(2, 4)):
            name = _identifier(rng)
            out.append(f"    def {name}(self, {rng.choice(_WORDS)}, {rng.choice(_WORDS)}=None):")
            out.append(f"        # {_words(rng, rng.randint(4, 10))}")
            for _ in range(rng.randint(2, 5)):
                out.append(f"        {_identifier(rng)} = self.{_identifier(rng)}({rng.choice(_WORDS)})")
            out.append(f"        return {_identifier(rng)}")
            out.append("")
    if numbered is not None:
        return "\n".join(f"{numbered + i:6}\t{line}" for i, line in enumerate(out[:lines]))
    return "\n".join(out[:lines])


def _traceback(rng: random.Random, path: str) -> str:
    frames = [
        f'  File "/testbed/{rng.choice(_MODULES)}", line {rng.randint(10, 900)}, in {_identifier(rng)}\n'
        f"    {_identifier(rng)} = {_identifier(rng)}({rng.choice(_WORDS)})"
        for _ in range(rng.randint(3, 6))
    ]
    error = rng.choice(["TypeError", "AttributeError", "ValueError", "KeyError"])
    return "Traceback (most recent call last):\n" + "\n".join(frames) + f"\n{error}: {_words(rng, 6)} in {path}"


def _call(call_id: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}


_SHELL_SYSTEM = (
    "You are a careful assistant that works with a computer shell, many times over, to solve programming "
    "tasks. Each of your replies must contain exactly ONE bash code block with ONE command (or commands "
    "joined with && or ||), after a THOUGHT section in which you explain your reasoning. Format each reply "
    "as in this example:\n\nTHOUGHT: what you found and what you will do next.\n\n```bash\nyour_command\n```"
    "\n\nA reply that does not follow these rules is rejected, and you are asked to write it again."
)
#: What follows the task in a shell agent's first message, as in mini-SWE-agent's instance template:
#: a real agent's first request is over the 1,024 tokens a provider's prompt cache starts at.
_SHELL_INSTRUCTIONS = """
<instructions>
# Task Instructions

## Overview

You are a software engineer working in a repository checked out at /testbed, talking to a computer
that runs one shell command for each of your replies. Your task is to make the change the
description above asks for in the non-test source files, in a way that is general and consistent
with the rest of the code base. You cannot ask questions: read the code, try things, and decide.

## Boundaries

- MODIFY: the regular source files under /testbed (the library itself).
- DO NOT MODIFY: the tests, the configuration files (pyproject.toml, setup.cfg, tox.ini and the
  like), the continuous integration files, or anything outside /testbed.
- Do not install packages; everything the repository needs is installed already.

## Recommended workflow

1. Find and read the code the description concerns: list folders, grep for names, print files.
2. Write a script that reproduces the problem, and run it to see the failure for yourself.
3. Edit the source code to resolve the problem, in the smallest change that is complete.
4. Run your script again to check the fix, then think about edge cases and try them too.
5. Run the tests nearest to the code you changed, and read any failure before you go on.

## Command execution rules

You are operating in an environment where

1. you write a single shell command in each reply,
2. the system runs that command in a subshell and shows you its output,
3. you see the result and write your next command.

Each reply must contain a THOUGHT section, where you explain your reasoning and what you are about
to do, and then exactly ONE bash code block with ONE command (or a few commands joined with && or
||). A reply with no bash block, or with more than one, is an error and will not run.

Every command runs in a new subshell: a directory change or an environment variable set in one
command is gone in the next. Prefix a command with `cd /path &&` where it needs one, and write
environment variables into the command line or into a file you source.

Commands that wait for input (editors such as vim or nano, pagers such as less, interactive
Python) will hang and be killed after a timeout. Never start one; pipe or redirect instead.

## Formatting your reply

Here is an example of a correct reply:

THOUGHT: I need to see which files define the parser before I change how it reads options, so I
will list the Python files under the package and grep for the class name.

```bash
ls -la /testbed/core && grep -rn "class OptionParser" /testbed/core
```

## Useful command examples

### Create a new file

```bash
cat <<'PY' > newfile.py
import numpy as np
hello = "world"
print(hello)
PY
```

### Edit a file with sed

```bash
# Replace every occurrence of a word
sed -i 's/old_string/new_string/g' filename.py
# Replace only the first occurrence on each line
sed -i 's/old_string/new_string/' filename.py
# Replace on line 1 only
sed -i '1s/old_string/new_string/' filename.py
# Replace on lines 1 to 10 only
sed -i '1,10s/old_string/new_string/g' filename.py
```

### View part of a file

```bash
# Lines 10 to 40 with their numbers
nl -ba filename.py | sed -n '10,40p'
# The first 60 lines
head -n 60 filename.py
```

### Search

```bash
grep -rn "def parse_value" /testbed --include=*.py
find /testbed -name "*.py" -path "*core*" | head -n 50
```

## Submission

When you have made the change and checked it, and you cannot make further progress, submit your
work by replying with a THOUGHT and this command alone:

```bash
echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && git add -A && git diff --cached
```

You cannot continue working on the task after submitting it.
</instructions>"""


def shell_agent(seed: int = 1, steps: int = 60) -> list[Message]:
    """A mini-SWE-agent-like session: one bash call a step, real-looking dumps, heredoc edits, test runs."""
    rng = random.Random(seed)
    task = (
        "<pr_description>\n"
        + "\n".join(f"{_words(rng, 14)} `{_identifier(rng)}` in {rng.choice(_MODULES)}." for _ in range(6))
        + "\n</pr_description>\n"
        + _SHELL_INSTRUCTIONS
    )
    messages: list[Message] = [
        {"role": "system", "content": _SHELL_SYSTEM},
        {"role": "user", "content": task},
    ]
    for step in range(steps):
        path = rng.choice(_MODULES)
        kind = rng.choice(["cat", "grep", "nl", "python", "heredoc", "pytest", "ls"])
        if kind == "cat":
            command, output = f"cat {path}", _source(rng, path, rng.randint(60, 160))
        elif kind == "nl":
            start = rng.randint(1, 400)
            command = f"nl -ba {path} | sed -n '{start},{start + 40}p'"
            output = _source(rng, path, 41, numbered=start)
        elif kind == "grep":
            name = _identifier(rng)
            command = f"grep -rn {name} /testbed/{path.split('/')[0]}"
            output = "\n".join(
                f"/testbed/{rng.choice(_MODULES)}:{rng.randint(1, 900)}:    {name} = {_identifier(rng)}()"
                for _ in range(rng.randint(3, 25))
            )
        elif kind == "python":
            command, output = "python reproduce_issue.py", _traceback(rng, path)
        elif kind == "heredoc":
            script = _source(rng, "reproduce_issue.py", rng.randint(15, 40))
            command, output = f"cat <<'EOF' > reproduce_issue.py\n{script}\nEOF", ""
        elif kind == "pytest":
            tests = rng.randint(5, 60)
            failed = rng.randint(0, 3)
            lines = [f"tests/test_{_identifier(rng)}.py::test_{_identifier(rng)} PASSED" for _ in range(tests)]
            command = f"python -m pytest tests/test_{path.split('/')[-1]} -q"
            output = "\n".join([*lines, f"{tests - failed} passed, {failed} failed in {rng.randint(1, 9)}.{step}s"])
        else:
            command = f"ls -la /testbed/{path.split('/')[0]}"
            output = "\n".join(
                f"-rw-r--r-- 1 root root {rng.randint(100, 90000):6} Dec  1 12:00 {_identifier(rng)}.py"
                for _ in range(rng.randint(4, 20))
            )
        call_id = f"call_{seed}_{step}"
        thought = f"THOUGHT: {_words(rng, rng.randint(12, 40))}.\n\n```bash\n{command}\n```"
        messages.append(
            {"role": "assistant", "content": thought, "tool_calls": [_call(call_id, "bash", {"command": command})]}
        )
        messages.append(
            {
                "role": "tool",
                "tool_call_id": call_id,
                "content": f"<returncode>0</returncode>\n<output>\n{output}\n</output>",
            }
        )
    # The submission, as the instructions ask: its output, the diff, ends the session (no request follows it).
    call_id = f"call_{seed}_{steps}"
    command = "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && git add -A && git diff --cached"
    thought = f"THOUGHT: done, {_words(rng, 10)}.\n\n```bash\n{command}\n```"
    messages.append(
        {"role": "assistant", "content": thought, "tool_calls": [_call(call_id, "bash", {"command": command})]}
    )
    path, line = rng.choice(_MODULES), rng.randint(10, 400)
    removed, added = _source(rng, path, 3).splitlines(), _source(rng, path, 6).splitlines()
    diff = "\n".join(
        [f"diff --git a/{path} b/{path}", f"--- a/{path}", f"+++ b/{path}", f"@@ -{line},3 +{line},6 @@"]
        + [f"-{text}" for text in removed]
        + [f"+{text}" for text in added]
    )
    messages.append(
        {"role": "tool", "tool_call_id": call_id, "content": f"<returncode>0</returncode>\n<output>\n{diff}\n</output>"}
    )
    return messages


def function_agent(seed: int = 2, turns: int = 14) -> list[Message]:
    """A tau-bench-like session: many short turns, native tool calls with short JSON results."""
    rng = random.Random(seed)
    user_id = f"{rng.choice(_WORDS)}_{rng.choice(_WORDS)}_{rng.randint(1000, 9999)}"
    messages: list[Message] = [
        {"role": "system", "content": "You help customers with their bookings. Use the tools; confirm before changes."},
        {"role": "user", "content": f"Hi, I want to change my trip. My id is {user_id}."},
    ]
    for turn in range(turns):
        for step in range(rng.randint(1, 3)):
            call_id = f"call_{seed}_{turn}_{step}"
            tool = rng.choice(["get_user_details", "get_reservation_details", "search_direct_flight", "calculate"])
            arguments = (
                {"user_id": user_id}
                if tool == "get_user_details"
                else {"reservation_id": f"R{rng.randint(10000, 99999)}X"}
            )
            if tool == "search_direct_flight":
                arguments = {
                    "origin": "JFK",
                    "destination": rng.choice(["SFO", "LAX", "ORD"]),
                    "date": f"2024-05-{turn + 1:02}",
                }
                result: Any = [
                    {"flight_number": f"HAT{rng.randint(100, 999)}", "origin": "JFK", "price": rng.randint(80, 900)}
                    for _ in range(rng.randint(2, 8))
                ]
            elif tool == "calculate":
                arguments, result = (
                    {"expression": f"{rng.randint(100, 900)} - {rng.randint(10, 90)}"},
                    f"{rng.randint(10, 800)}.0",
                )
            else:
                result = {"id": arguments.get("reservation_id", user_id), "items": [_identifier(rng) for _ in range(6)]}
            messages.append({"role": "assistant", "content": None, "tool_calls": [_call(call_id, tool, arguments)]})
            messages.append({"role": "tool", "tool_call_id": call_id, "content": json.dumps(result)})
        messages.append(
            {"role": "assistant", "content": f"I found {_words(rng, rng.randint(10, 30))}. Shall I go ahead?"}
        )
        messages.append({"role": "user", "content": f"Yes, {_words(rng, rng.randint(3, 12))}."})
    messages.append({"role": "assistant", "content": "Done: your reservation is updated."})
    return messages


def editor_agent(seed: int = 3, steps: int = 26) -> list[Message]:
    """An SWE-agent-like session: an editor tool that views, edits and creates files, and a shell."""
    rng = random.Random(seed)
    messages: list[Message] = [
        {"role": "system", "content": "You solve issues in a repository with an editor tool and a shell."},
        {"role": "user", "content": f"Fix: {_words(rng, 30)} ({rng.choice(_MODULES)})."},
    ]
    for step in range(steps):
        path = f"/repo/{rng.choice(_MODULES)}"
        action = rng.choice(["view", "view", "str_replace", "create", "bash"])
        call_id = f"call_{seed}_{step}"
        if action == "view":
            start = rng.randint(1, 300)
            arguments: dict[str, Any] = {"command": "view", "path": path, "view_range": [start, start + 60]}
            output = _source(rng, path, 61, numbered=start)
        elif action == "str_replace":
            old, new = _source(rng, path, rng.randint(3, 8)), _source(rng, path, rng.randint(3, 10))
            arguments, output = (
                {"command": "str_replace", "path": path, "old_str": old, "new_str": new},
                f"The file {path} has been edited.",
            )
        elif action == "create":
            arguments = {
                "command": "create",
                "path": f"/repo/tests/test_{step}.py",
                "file_text": _source(rng, path, 30),
            }
            output = f"File created successfully at: /repo/tests/test_{step}.py"
        else:
            arguments, output = (
                {"command": f"python -m pytest /repo/tests -x -q -k {_identifier(rng)}"},
                _traceback(rng, path),
            )
        name = "bash" if action == "bash" else "str_replace_editor"
        messages.append(
            {
                "role": "assistant",
                "content": f"{_words(rng, rng.randint(8, 25))}.",
                "tool_calls": [_call(call_id, name, arguments)],
            }
        )
        messages.append({"role": "tool", "tool_call_id": call_id, "content": output})
    messages.append({"role": "assistant", "content": "The fix is in place and the tests pass."})
    return messages


def chat(seed: int = 4, turns: int = 18) -> list[Message]:
    """A plain chat: questions and long answers with code, no tools."""
    rng = random.Random(seed)
    messages: list[Message] = [{"role": "system", "content": "You are a helpful programming assistant."}]
    for _ in range(turns):
        messages.append({"role": "user", "content": f"How do I {_words(rng, rng.randint(6, 20))}?"})
        code = _source(rng, "example.py", rng.randint(10, 50))
        messages.append(
            {"role": "assistant", "content": f"{_words(rng, rng.randint(30, 120))}.\n\n```python\n{code}\n```"}
        )
    return messages


SESSIONS = {
    "made__shell": shell_agent,
    "made__functions": function_agent,
    "made__editor": editor_agent,
    "made__chat": chat,
}


#: How many messages of the shell agent's session the example request sends: its first 40 steps
#: after the system prompt and the task, about 20,400 tokens, so a 16k window trims it.
REQUEST_MESSAGES = 82
_BASH_TOOL = {
    "type": "function",
    "function": {
        "name": "bash",
        "description": "Run one bash command in the repository and return its output.",
        "parameters": {
            "type": "object",
            "properties": {"command": {"type": "string", "description": "The command to run."}},
            "required": ["command"],
        },
    },
}


def request() -> dict[str, Any]:
    """One request body in OpenAI's chat format: the shell agent's history before its next reply, with its tool."""
    messages = shell_agent()[:REQUEST_MESSAGES]
    return {"model": "gpt-4o", "messages": messages, "tools": [_BASH_TOOL], "max_tokens": 1000}


def write(folder: Path = MADE_DIR, request_path: Path = MADE_REQUEST) -> list[Path]:
    """
    Write every made session as a session file (``{"source", "messages"}``) into ``folder``, and the
    example request body to ``request_path``.
    """
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for name, make in SESSIONS.items():
        path = folder / f"{name}.json"
        body = {"source": "tests/support/made_sessions.py", "license": "MIT (this repository)", "messages": make()}
        path.write_text(json.dumps(body, indent=1) + "\n", encoding="utf-8")
        written.append(path)
    request_path.write_text(json.dumps(request(), indent=1) + "\n", encoding="utf-8")
    return [*written, request_path]


if __name__ == "__main__":
    for path in write():
        print(path, path.stat().st_size)
