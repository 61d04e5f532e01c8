"""Which sources a research run keeps (docs/research.md): its search policy, the pre-flight check of what it will use, the filters and the gates."""
