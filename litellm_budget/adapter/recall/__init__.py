"""
The recall tool: where a request may be offered it, as each API defines it (``offer.py``), a
request's recall scope (``scope.py``), what waits for a recall (``store.py``), the answer
(``answer.py``), serving it inside LiteLLM (``server.py``), the request after it
(``followup.py``), and what each recall reports (``outcomes.py``).
"""
