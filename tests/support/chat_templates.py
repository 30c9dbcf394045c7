"""
Strict chat templates, as local model servers (vLLM, llama.cpp) render them: Jinja, and the
template raises on a conversation it does not accept. Three kinds, after the models that ship them:

- ``SYSTEM_FIRST`` (Qwen's): a system message anywhere but in the leading block is refused.
- ``ALTERNATING`` (Mistral's): after the leading system message, user and assistant turns must
  alternate, starting with the user; tool results and the assistant messages that make tool calls
  are set aside, as Mistral's template sets them aside.
- ``FOLDED_SYSTEM`` (Gemma's): no system role; the system text is folded into the first user turn,
  and a system message anywhere else is refused.
"""

from __future__ import annotations

from typing import Any

import jinja2
from jinja2.sandbox import ImmutableSandboxedEnvironment

_TEXT = """{%- macro text(content) -%}
{%- if content is string -%}{{ content }}{%- elif content -%}
{%- for part in content -%}{%- if part.type == "text" -%}{{ part.text }}{%- endif -%}{%- endfor -%}
{%- endif -%}{%- endmacro -%}"""

SYSTEM_FIRST = (
    _TEXT
    + """
{%- for message in messages -%}
  {%- if message.role == "system" and not loop.first and messages[loop.index0 - 1].role != "system" -%}
    {{- raise_exception("System message must be at the beginning.") -}}
  {%- endif -%}
  {{- "<|im_start|>" + message.role + "\\n" + text(message.content) + "<|im_end|>\\n" -}}
{%- endfor -%}"""
)

ALTERNATING = (
    _TEXT
    + """
{%- set ns = namespace(index=0, leading=true) -%}
{%- for message in messages -%}
  {%- if message.role == "system" and ns.leading -%}
    {{- "[SYSTEM]" + text(message.content) -}}
  {%- else -%}
    {%- set ns.leading = false -%}
    {%- if message.role == "system" -%}
      {{- raise_exception("Conversation roles must alternate user/assistant/user/assistant/...") -}}
    {%- elif message.role == "tool" or (message.role == "assistant" and message.tool_calls) -%}
      {{- "[TOOL]" -}}
    {%- else -%}
      {%- if (message.role == "user") != (ns.index % 2 == 0) -%}
        {{- raise_exception("Conversation roles must alternate user/assistant/user/assistant/...") -}}
      {%- endif -%}
      {%- set ns.index = ns.index + 1 -%}
      {{- "[" + message.role + "]" + text(message.content) -}}
    {%- endif -%}
  {%- endif -%}
{%- endfor -%}"""
)

FOLDED_SYSTEM = (
    _TEXT
    + """
{%- set ns = namespace(system="", folded=false, leading=true) -%}
{%- for message in messages -%}
  {%- if message.role == "system" and ns.leading -%}
    {%- set ns.system = ns.system + text(message.content) + "\\n\\n" -%}
  {%- elif message.role == "system" -%}
    {{- raise_exception("System role not supported") -}}
  {%- else -%}
    {%- set ns.leading = false -%}
    {%- if message.role == "user" and not ns.folded -%}
      {{- "<start_of_turn>user\\n" + ns.system + text(message.content) + "<end_of_turn>\\n" -}}
      {%- set ns.folded = true -%}
    {%- else -%}
      {{- "<start_of_turn>" + message.role + "\\n" + text(message.content) + "<end_of_turn>\\n" -}}
    {%- endif -%}
  {%- endif -%}
{%- endfor -%}"""
)

TEMPLATES = {"system_first": SYSTEM_FIRST, "alternating": ALTERNATING, "folded_system": FOLDED_SYSTEM}


def _raise(message: str) -> None:
    raise jinja2.TemplateError(message)


_ENV = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
_ENV.globals["raise_exception"] = _raise
_COMPILED = {name: _ENV.from_string(source) for name, source in TEMPLATES.items()}


def renders(name: str, messages: list[dict[str, Any]]) -> bool:
    """Whether the template ``name`` accepts ``messages`` (as a server would render them)."""
    try:
        _COMPILED[name].render(messages=messages)
    except jinja2.TemplateError:
        return False
    return True
