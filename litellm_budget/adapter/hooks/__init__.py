"""A request's way through the hooks: one pass per hook, the request read once, then a chain of named steps."""
