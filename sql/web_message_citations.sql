-- The citations of one stored answer, in the answer's order.
SELECT position, url, title, domain
FROM citations
WHERE message_id = $1
ORDER BY position;
