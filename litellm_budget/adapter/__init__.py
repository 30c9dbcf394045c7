"""
The LiteLLM adapter: read a request, call the core, publish the report, return.

``callback.py`` holds the hooks; each reads its request once into a pass (``hook_pass.py``; what
differs per hook: ``passes.py``) and takes its steps inside the fail-open boundary
(``failopen.py``), with the settings of ``config.py``. A pass reads its request through
``shapes.py`` (where each call type keeps its messages) and ``request.py`` (the rest of LiteLLM's
kwargs), finds what it is fitted against (``targets.py``, ``fallbacks.py``), and keeps what it
knows about the call in one record (``calls.py``) of the plugin's memory (``memory.py``). Between
requests the memory holds each model's learned token ratio (``calibration.py``), each
conversation's last edits (``conversation_state.py``) and the summaries of dropped blocks
(``summarizer.py``, asked by ``summary_step.py`` with the prompt of ``summary_prompt.py``), shared
through the proxy's Redis (``shared.py``, ``redis_pipe.py``). A client's Anthropic
``context_management`` is served by ``context_management.py``. The report goes out through
``publish.py`` and ``metrics.py``; what the hooks that run after the answer do is in
``observers.py``.

The rest, by role. The window a backend really serves: ``served_windows.py`` (learned from its
errors and silent cuts; ``fallbacks.py`` refits the request within its call). Recall of what a fit
removed: ``recall_tool.py`` (the tool offered), ``recall_state.py`` and ``recall_store.py`` (what is
kept), ``recall_server.py``, ``recall_answer.py``, ``recall_followup.py`` and ``recall_report.py``
(LiteLLM's loop serving it). The guardrail form: ``guardrail.py``, ``guardrail_start.py``. The
Router's filter hook lends a trimmed list in place: ``lending.py``, ``fit_records.py``. Counts the
size gate leaves for later: ``later_counts.py``. Prompt caches: ``cache_hints.py`` (breakpoints,
``prompt_cache_key``), ``cache_observed.py`` (what the provider's usage says). Streams:
``stream_edits.py``. Settings refused at start: ``invalid_settings.py``. Requests LiteLLM refused
before the plugin saw them: ``unfitted.py``. LiteLLM's own compression beside it: ``coexistence.py``.
"""
