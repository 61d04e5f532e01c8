"""Progress of runs: events (docs/web.md, "Progress events") and the server that streams them."""
