"""The lake: its file layout, the catalog, validation, landing, consolidation, compaction and analyst SQL. The only package that opens the catalog."""
