-- A floor's spaces by customer, building and floor as the floor rollup's refresh names them (aggregate-floors.ts): the
-- refresh sums each floor's rows from its spaces' buckets, and without this index SQLite read every floor space of the
-- customer for each floor (docs/performance.md, issue 40). Postgres joins the floors it refreshes to floor_spaces in
-- one hash join, and has no such index.
CREATE INDEX IF NOT EXISTS `floor_spaces_floor_idx` ON `floor_spaces` (`customer_id`, COALESCE(`building_id`, ''), COALESCE(`floor_id`, ''));
