"""A client's own edits: Anthropic's context management and compaction, served here."""
