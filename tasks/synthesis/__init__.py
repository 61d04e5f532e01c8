"""Synthesis: sources to cited insights (extractive or LLM), passages, and the model blueprint."""
