UPDATE commit_tokens SET bumped_at = now() WHERE name = 'consolidate';
