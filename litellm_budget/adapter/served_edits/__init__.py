"""A client's Anthropic ``context_management``, served here where the upstream would not, and said in the answer."""
