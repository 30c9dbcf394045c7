"""Summaries of dropped blocks from a cheap model group, asked for by the hook before the fit."""
