"""What the plugin learns of a deployment from its answers: the window it really serves, how its provider counts."""
