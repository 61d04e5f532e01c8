-- Chart: a task's consolidated sources by score_final, in ten bins of 0.1.
SELECT least(CAST(floor(score_final * 10) AS INTEGER), 9) AS bin, count(*) AS sources
FROM consolidated
WHERE task_id = $1
GROUP BY bin
ORDER BY bin;
