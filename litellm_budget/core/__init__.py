"""
The pure core: window, limits, counting, the ledger, the elide/drop/cut steps, the policies
and the report, over plain lists of messages. It never imports the adapter or the tools, and
imports ``litellm`` only lazily: for the default window lookup and the error ``fit()`` raises.

The request path, in order: ``fit.py`` (resolve the window, count, gate) -> ``policies.py``
(``elide``, ``plan``, ``auto``) -> ``elide.py`` / ``drop.py`` / ``cut.py`` -> ``report.py``.
"""
