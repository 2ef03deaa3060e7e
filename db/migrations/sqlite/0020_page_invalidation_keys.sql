-- A poll page's invalidation row names its floor spaces by key, grouped by their readings' first and last instant:
-- spans is `[[first_ms, last_ms, key, key, ...], ...]` (was `[[floor_space_id, first_ms, last_ms], ...]`, about 70 bytes
-- a floor space, which cost a page of 1,000 readings 3 to 6 ms to write; docs/performance.md, issue 40). Rows a refresh
-- has not folded yet are rewritten in the new form, a group per floor space, so none is lost.
UPDATE `aggregate_page_invalidations` SET `spans` = COALESCE((
  SELECT json_group_array(json_array(json_extract(e.value, '$[1]'), json_extract(e.value, '$[2]'), f.`floor_space_key`))
    FROM json_each(`aggregate_page_invalidations`.`spans`) AS e
    JOIN `floor_spaces` f ON f.`customer_id` = `aggregate_page_invalidations`.`customer_id` AND f.`floor_space_id` = json_extract(e.value, '$[0]')), '[]')
 WHERE json_type(`spans`, '$[0][0]') = 'text';
