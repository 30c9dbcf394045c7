"""
Whether a request is well-formed enough to trim safely, per format (``_chat_checks.py``,
``_anthropic_checks.py``, ``_responses_checks.py``), and the checks' verdicts remembered by
content (``_verdicts.py``), so a growing conversation's history is checked once.
"""
