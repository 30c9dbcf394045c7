"""The operator's tools, never imported by the request path; a clone's research replay builds on them."""
