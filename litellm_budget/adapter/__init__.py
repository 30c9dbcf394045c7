"""
The LiteLLM adapter. ``callback.py`` holds the hooks, guarded by ``failopen.py``, with
settings from ``config.py``. A hook reads the LiteLLM request (``request.py``), finds what it
is fitted against (``targets.py``), fits it once per window (``fitting.py``, ``once.py``,
``lending.py``), learns token ratios (``calibration.py``) and publishes the report
(``publish.py``, ``metrics.py``).
"""
