"""GitHub-shaped JSON built from the fake's records."""
