-- occupancy_readings partitioned by month of observed_at (issue 40; native declarative partitioning, no extension).
-- Retention drops a whole month's partition instead of deleting its rows one by one, and a time-range read opens only
-- the months it asks for. Monthly partitions are UTC calendar months, [first instant, first instant of the next),
-- named occupancy_readings_YYYY_MM; the store makes a month's partition before a page with readings in it commits
-- (src/store/reading-partitions.ts). occupancy_readings_default takes any row no partition covers (a user's own
-- INSERT of a month the store never wrote): docs/operations.md says how to split it.
--
-- A database with readings does not copy them: the existing table becomes the one partition
-- occupancy_readings_migrated, bounded from the first month of its oldest reading to the month after its newest,
-- ATTACHed with a CHECK constraint that proves the bound so the attach does not scan it (the constraint's VALIDATE
-- reads the table once; nothing is rewritten, no row moves, none can be lost or doubled). Its indexes become the
-- partitions of the new table's indexes as they are. Retention deletes from it row-wise until its last month is past
-- the retention period, and then drops it whole.
--
-- The views that read occupancy_readings are re-pointed to the new table in place (CREATE OR REPLACE, same columns)
-- before the old one is attached, so views built on them, ours and users', survive; db/views/pg.sql is applied again
-- after this migration anyway.
ALTER TABLE occupancy_readings RENAME TO occupancy_readings_migrated;
--> statement-breakpoint
ALTER TABLE occupancy_readings_migrated RENAME CONSTRAINT occupancy_readings_pkey TO occupancy_readings_migrated_pkey;
--> statement-breakpoint
ALTER INDEX occupancy_readings_observed_idx RENAME TO occupancy_readings_migrated_observed_idx;
--> statement-breakpoint
-- The same columns, in the same storage order, with the same constraints and index names as 0008 and 0011 left them.
-- The primary key includes the partition key, as Postgres requires of a unique index on a partitioned table.
CREATE TABLE "occupancy_readings" (
	"observed_at" timestamp (3) with time zone NOT NULL,
	"event_uuid" uuid,
	"floor_space_key" integer NOT NULL,
	"headcount" integer,
	"polled_arrival" integer,
	"delivered_arrival" integer,
	"status_code" integer NOT NULL,
	"event_text" text,
	CONSTRAINT "occupancy_readings_pkey" PRIMARY KEY("floor_space_key","observed_at"),
	CONSTRAINT "occupancy_readings_headcount_non_negative" CHECK ("occupancy_readings"."headcount" >= 0)
) PARTITION BY RANGE ("observed_at");
--> statement-breakpoint
CREATE INDEX "occupancy_readings_observed_idx" ON "occupancy_readings" USING btree ("observed_at");
--> statement-breakpoint
CREATE TABLE occupancy_readings_default PARTITION OF occupancy_readings DEFAULT;
--> statement-breakpoint
CREATE OR REPLACE VIEW occupancy AS
SELECT f.customer_id,
       f.floor_space_id,
       r.observed_at,
       s.occupancy_status,
       r.headcount,
       CASE WHEN r.delivered_arrival IS NULL OR r.polled_arrival < r.delivered_arrival THEN 'poll' ELSE 'webhook' END AS source,
       COALESCE(r.event_uuid::text, r.event_text) AS event_id,
       CASE WHEN r.delivered_arrival IS NULL OR r.polled_arrival < r.delivered_arrival THEN p.arrived_at ELSE d.arrived_at END AS ingested_at,
       p.arrived_at AS polled_at,
       d.arrived_at AS delivered_at
  FROM occupancy_readings r
  JOIN floor_spaces f ON f.floor_space_key = r.floor_space_key
  JOIN occupancy_statuses s ON s.status_code = r.status_code
  LEFT JOIN occupancy_arrivals p ON p.arrival_key = r.polled_arrival
  LEFT JOIN occupancy_arrivals d ON d.arrival_key = r.delivered_arrival;
--> statement-breakpoint
CREATE OR REPLACE VIEW occupancy_latest AS
SELECT f.customer_id,
       f.floor_space_id,
       r.observed_at,
       s.occupancy_status,
       r.headcount,
       CASE WHEN r.delivered_arrival IS NULL OR r.polled_arrival < r.delivered_arrival THEN 'poll' ELSE 'webhook' END AS source,
       COALESCE(r.event_uuid::text, r.event_text) AS event_id,
       CASE WHEN r.delivered_arrival IS NULL OR r.polled_arrival < r.delivered_arrival THEN p.arrived_at ELSE d.arrived_at END AS ingested_at
  FROM floor_spaces f
 CROSS JOIN LATERAL (SELECT x.* FROM occupancy_readings x WHERE x.floor_space_key = f.floor_space_key ORDER BY x.observed_at DESC LIMIT 1) r
  JOIN occupancy_statuses s ON s.status_code = r.status_code
  LEFT JOIN occupancy_arrivals p ON p.arrival_key = r.polled_arrival
  LEFT JOIN occupancy_arrivals d ON d.arrival_key = r.delivered_arrival;
--> statement-breakpoint
DO $$
DECLARE
  oldest timestamptz;
  newest timestamptz;
  lo text;
  hi text;
BEGIN
  SELECT min(observed_at), max(observed_at) INTO oldest, newest FROM occupancy_readings_migrated;
  IF oldest IS NULL THEN
    DROP TABLE occupancy_readings_migrated;
    RETURN;
  END IF;
  lo := to_char(date_trunc('month', oldest AT TIME ZONE 'UTC'), 'YYYY-MM-DD"T00:00:00Z"');
  hi := to_char(date_trunc('month', newest AT TIME ZONE 'UTC') + interval '1 month', 'YYYY-MM-DD"T00:00:00Z"');
  EXECUTE format('ALTER TABLE occupancy_readings_migrated ADD CONSTRAINT occupancy_readings_migrated_bound CHECK (observed_at >= %L::timestamptz AND observed_at < %L::timestamptz)', lo, hi);
  EXECUTE format('ALTER TABLE occupancy_readings ATTACH PARTITION occupancy_readings_migrated FOR VALUES FROM (%L) TO (%L)', lo, hi);
  -- The partition's bound says the same now; the constraint would only cost a check per row written.
  ALTER TABLE occupancy_readings_migrated DROP CONSTRAINT occupancy_readings_migrated_bound;
END
$$;
