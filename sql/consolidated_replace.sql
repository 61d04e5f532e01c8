-- The task's output becomes consolidated_next (consolidated_clear went first).
INSERT INTO consolidated SELECT * FROM consolidated_next ORDER BY final_rank;
