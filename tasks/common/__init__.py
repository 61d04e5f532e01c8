"""What every stage shares: settings, the one outbound HTTP path, the LLM client, text processing, errors."""
