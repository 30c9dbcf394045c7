"""The policies and what they work on: the ledger, the units, elision, drops, the cut, summaries."""
