"""
The LiteLLM adapter: read a request, call the core, publish the report, return.

Here: ``callback.py``, the hooks LiteLLM calls (``guardrail.py`` and ``guardrail_start.py``: the same
as a guardrail); ``failopen.py``, the boundary every step runs in; ``memory.py``, what the plugin
remembers between requests. By role, each subpackage's face says more:

- ``hooks/``: a request's way from a hook to its fit: one pass per hook, its steps, and what the
  hooks after the answer observe.
- ``request/``: what a request is fitted against: its kwargs, its call type's shape, its window
  and settings, the operator's fallbacks with the plugin's refit.
- ``records/``: a call's life in one record, the lists lent in place, a conversation's edits.
- ``windows/``: what answers teach of a deployment: the window it serves, how it counts.
- ``report/``: where a report goes: the event, LiteLLM's metadata and headers, Prometheus.
- ``recall/``: the recall tool, from its offer to its answer.
- ``summaries/``: summaries of dropped blocks from a cheap model group.
- ``replicas/``: what replicas share through Redis.
- ``served_edits/``: a client's Anthropic ``context_management``, served here.
- ``settings/``: the settings in force, and what is refused at start.
"""
