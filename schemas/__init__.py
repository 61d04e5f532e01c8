"""Contracts: pydantic models that every part of searchlake agrees on."""
