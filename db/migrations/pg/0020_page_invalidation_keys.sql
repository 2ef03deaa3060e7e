-- A poll page's invalidation row names its floor spaces by key, grouped by their readings' first and last instant:
-- spans is `[[first_ms, last_ms, key, key, ...], ...]` (was `[[floor_space_id, first_ms, last_ms], ...]`, about 70 bytes
-- a floor space, which cost a page of 1,000 readings 3 to 6 ms to write; docs/performance.md, issue 40). Rows a refresh
-- has not folded yet are rewritten in the new form, a group per floor space, so none is lost.
UPDATE "aggregate_page_invalidations" p SET "spans" = COALESCE((
  SELECT json_agg(json_build_array((e->>1)::int8, (e->>2)::int8, f."floor_space_key") ORDER BY f."floor_space_key")::text
    FROM jsonb_array_elements(p."spans"::jsonb) AS e
    JOIN "floor_spaces" f ON f."customer_id" = p."customer_id" AND f."floor_space_id" = e->>0), '[]')
 WHERE jsonb_typeof(p."spans"::jsonb -> 0 -> 0) = 'string';
