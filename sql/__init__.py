"""Every SQL statement searchlake runs lives in a .sql file here."""
