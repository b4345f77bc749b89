"""The Hub, reached one way: one client, one error translator, retries, pacing, discovery."""
