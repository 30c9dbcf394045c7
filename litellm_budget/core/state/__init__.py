"""Conversation state: the edits sent last, kept while they fit, and the outputs they hid."""
