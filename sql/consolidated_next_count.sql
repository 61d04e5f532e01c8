SELECT count(*) FROM consolidated_next;
