LOAD fts;
