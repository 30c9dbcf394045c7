"""
What the plugin keeps about calls and conversations: a call's life in one record (``calls.py``),
the one index of lists lent in place between two hooks (``lending.py``), what names a fit
(``fit_records.py``), and the edits a conversation was sent (``conversations.py``).
"""
