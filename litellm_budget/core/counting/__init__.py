"""Counting in real tokens, and the size bound that lets a request pass uncounted."""
