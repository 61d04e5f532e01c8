"""Retrieval: planning queries, routing them to providers, scoring hits, fetching pages; providers/ holds one module per search API."""
