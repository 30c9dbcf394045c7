"""The budget a request is fitted to: the settings, the window, the limits they make."""
