-- Small adjacent table files merged into larger ones (only files committed
-- before: a commit of its own after the flush).
CALL ducklake_merge_adjacent_files('lake');
