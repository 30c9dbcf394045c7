"""
A client's Anthropic ``context_management``, served here where the upstream would not
(``context_management.py``), and said in a streamed answer's events (``stream_edits.py``).
"""
