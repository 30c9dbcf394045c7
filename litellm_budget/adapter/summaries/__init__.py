"""
Summaries of dropped blocks from a cheap model group: the summarizer (``summarizer.py``), the call's
prompt and reply (``prompt.py``), and the hook's step that asks before the fit (``step.py``).
"""
