"""
What the plugin learns of a deployment from its answers: the window its backend really serves
(``served_windows.py``) and how its provider counts tokens (``calibration.py``).
"""
