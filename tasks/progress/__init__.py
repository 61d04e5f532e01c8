"""Progress of runs: events (spec 002) and the server that streams them."""
