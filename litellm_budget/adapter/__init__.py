"""
The LiteLLM adapter: read a request, call the core, publish the report, return.

``callback.py`` holds the hooks; each reads its request once into a pass (``hook_pass.py``) and
takes its steps inside the fail-open boundary (``failopen.py``), with the settings of
``config.py``. A pass reads its request through ``shapes.py`` (where each call type keeps its
messages) and ``request.py`` (the rest of LiteLLM's kwargs), finds what it is fitted against
(``targets.py``, ``fallbacks.py``), and keeps what it knows about the call in one record
(``calls.py``) of the plugin's memory (``memory.py``). Between requests the memory holds each
model's learned token ratio (``calibration.py``), each conversation's last edits
(``conversation_state.py``) and the summaries of dropped blocks (``summarizer.py``, asked by
``summary_step.py`` with the prompt of ``summary_prompt.py``), shared through the proxy's Redis
(``shared.py``, ``redis_pipe.py``). A client's Anthropic ``context_management`` is served by
``context_management.py``. The report goes out through ``publish.py`` and ``metrics.py``.
"""
