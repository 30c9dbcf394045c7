"""What the plugin keeps about calls and conversations, between hooks and across requests."""
