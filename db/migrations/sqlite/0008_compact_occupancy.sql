-- Occupancy in a compact layout: about a sixth of the bytes per reading (docs/performance.md). The old table is
-- renamed occupancy_legacy; the `occupancy` view shows the new tables and the rows still in the old one, so readers see
-- every reading at every step. The rows then move in batches that each commit (src/store/compact-occupancy.ts), so
-- a conversion that is stopped resumes where it stopped; 0009 drops the emptied old table.
DROP VIEW IF EXISTS webhook_reconciliation;
--> statement-breakpoint
DROP VIEW IF EXISTS occupancy_hourly;
--> statement-breakpoint
DROP VIEW IF EXISTS occupancy_latest;
--> statement-breakpoint
ALTER TABLE occupancy RENAME TO occupancy_legacy;
--> statement-breakpoint
CREATE TABLE `floor_spaces` (
	`floor_space_key` integer PRIMARY KEY,
	`customer_id` text NOT NULL,
	`floor_space_id` text NOT NULL,
	CONSTRAINT `floor_spaces_customer_floor_space_unique` UNIQUE(`customer_id`, `floor_space_id`)
);
--> statement-breakpoint
CREATE TABLE `occupancy_statuses` (
	`status_code` integer PRIMARY KEY,
	`occupancy_status` text NOT NULL,
	CONSTRAINT `occupancy_statuses_status_unique` UNIQUE(`occupancy_status`)
);
--> statement-breakpoint
CREATE TABLE `occupancy_arrivals` (
	`arrival_key` integer PRIMARY KEY,
	`source` text NOT NULL,
	`arrived_at` text NOT NULL,
	CONSTRAINT "occupancy_arrivals_arrived_at_iso" CHECK("occupancy_arrivals"."arrived_at" GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9].[0-9][0-9][0-9]Z'),
	CONSTRAINT "occupancy_arrivals_source_known" CHECK("occupancy_arrivals"."source" IN ('poll', 'webhook'))
);
--> statement-breakpoint
-- WITHOUT ROWID: the row lives in the primary key's b-tree, so there is no second copy of the key. No foreign keys
-- (a parent lookup per column per row on the hot path); the store writes keys it has just found or made.
CREATE TABLE `occupancy_readings` (
	`floor_space_key` integer NOT NULL,
	`observed_ms` integer NOT NULL,
	`status_code` integer NOT NULL,
	`headcount` integer NOT NULL,
	`polled_arrival` integer,
	`delivered_arrival` integer,
	`event_id` blob,
	PRIMARY KEY(`floor_space_key`, `observed_ms`),
	CONSTRAINT "occupancy_readings_headcount_non_negative" CHECK("occupancy_readings"."headcount" >= 0)
) WITHOUT ROWID;
--> statement-breakpoint
-- The exact expression of occupancy.observed_at, so users' time-range filters on the view are served by this index.
CREATE INDEX `occupancy_readings_observed_idx` ON `occupancy_readings` (strftime('%Y-%m-%dT%H:%M:%fZ', observed_ms / 1000.0, 'unixepoch'));
--> statement-breakpoint
-- The old rows' arrivals, oldest first (a lower key is an earlier arrival), and an index to find them by source and
-- time while the rows move; 0009 drops the index.
INSERT INTO occupancy_arrivals (source, arrived_at)
SELECT src, at FROM (
  SELECT 'poll' AS src, COALESCE(polled_at, CASE WHEN source = 'poll' THEN ingested_at END) AS at FROM occupancy_legacy
  UNION
  SELECT 'webhook' AS src, COALESCE(delivered_at, CASE WHEN source = 'webhook' THEN ingested_at END) AS at FROM occupancy_legacy
) WHERE at IS NOT NULL
ORDER BY at, src;
--> statement-breakpoint
CREATE INDEX occupancy_arrivals_legacy_idx ON occupancy_arrivals (source, arrived_at);
--> statement-breakpoint
-- The documented occupancy table, as a view over the compact tables: the same names, columns, types and meanings.
-- A reading's source and ingested_at are those of its first arrival (the lower arrival key); event ids kept as 16
-- bytes are shown in their lowercase text form.
CREATE VIEW occupancy AS
SELECT f.customer_id,
       f.floor_space_id,
       strftime('%Y-%m-%dT%H:%M:%fZ', r.observed_ms / 1000.0, 'unixepoch') AS observed_at,
       s.occupancy_status,
       r.headcount,
       CASE WHEN r.delivered_arrival IS NULL OR r.polled_arrival < r.delivered_arrival THEN 'poll' ELSE 'webhook' END AS source,
       CASE WHEN typeof(r.event_id) = 'blob'
            THEN lower(substr(hex(r.event_id), 1, 8) || '-' || substr(hex(r.event_id), 9, 4) || '-' || substr(hex(r.event_id), 13, 4)
                       || '-' || substr(hex(r.event_id), 17, 4) || '-' || substr(hex(r.event_id), 21))
            ELSE r.event_id END AS event_id,
       CASE WHEN r.delivered_arrival IS NULL OR r.polled_arrival < r.delivered_arrival THEN p.arrived_at ELSE d.arrived_at END AS ingested_at,
       p.arrived_at AS polled_at,
       d.arrived_at AS delivered_at
  FROM occupancy_readings r
  JOIN floor_spaces f ON f.floor_space_key = r.floor_space_key
  JOIN occupancy_statuses s ON s.status_code = r.status_code
  LEFT JOIN occupancy_arrivals p ON p.arrival_key = r.polled_arrival
  LEFT JOIN occupancy_arrivals d ON d.arrival_key = r.delivered_arrival
UNION ALL
-- Rows not yet moved by the conversion (src/store/compact-occupancy.ts); 0009 drops this part with the old table.
SELECT customer_id, floor_space_id, observed_at, occupancy_status, headcount, source, event_id, ingested_at, polled_at,
       delivered_at
  FROM occupancy_legacy;
--> statement-breakpoint
-- The latest reading per customer and floor space. (customer_id, floor_space_id, observed_at) is the primary key,
-- so "no later reading exists" is an index lookup and there is exactly one row per floor space.
CREATE VIEW occupancy_latest AS
SELECT o.customer_id, o.floor_space_id, o.observed_at, o.occupancy_status, o.headcount, o.source, o.event_id,
       o.ingested_at
  FROM occupancy o
 WHERE NOT EXISTS (
         SELECT 1 FROM occupancy n
          WHERE n.customer_id = o.customer_id AND n.floor_space_id = o.floor_space_id AND n.observed_at > o.observed_at
       );
--> statement-breakpoint
-- Per customer, floor space and UTC hour. hour is the start of the hour in the canonical text form.
-- occupied_share = occupied_readings / readings (readings whose status is CurrentlyOccupied).
CREATE VIEW occupancy_hourly AS
SELECT customer_id, floor_space_id,
       substr(observed_at, 1, 13) || ':00:00.000Z' AS hour,
       COUNT(*) AS readings,
       SUM(CASE WHEN occupancy_status = 'CurrentlyOccupied' THEN 1 ELSE 0 END) AS occupied_readings,
       SUM(headcount) AS total_headcount,
       AVG(headcount) AS avg_headcount,
       MAX(headcount) AS peak_headcount,
       AVG(CASE WHEN occupancy_status = 'CurrentlyOccupied' THEN 1.0 ELSE 0.0 END) AS occupied_share
  FROM occupancy
 GROUP BY customer_id, floor_space_id, substr(observed_at, 1, 13);
--> statement-breakpoint
-- Webhook and poll reconciliation, per customer and UTC day of observation. A reading counts as polled when polling
-- read it, as delivered when a webhook delivery brought it (rows stored before these columns existed: by their
-- source). missed_deliveries: polling found it, no delivery brought it. unconfirmed_deliveries: a delivery brought it,
-- polling has read past its time (the occupancy watermark) and never found it. For a customer without a webhook
-- subscription every polled reading counts as missed: read the rows of customers that have one.
CREATE VIEW webhook_reconciliation AS
SELECT o.customer_id,
       substr(o.observed_at, 1, 10) AS day,
       count(*) AS readings,
       sum(o.polled) AS polled,
       sum(o.delivered) AS delivered,
       sum(CASE WHEN o.polled = 1 AND o.delivered = 0 THEN 1 ELSE 0 END) AS missed_deliveries,
       sum(CASE WHEN o.delivered = 1 AND o.polled = 0 AND o.observed_at < s.watermark THEN 1 ELSE 0 END) AS unconfirmed_deliveries
  FROM (SELECT customer_id, observed_at,
               CASE WHEN polled_at IS NOT NULL OR source = 'poll' THEN 1 ELSE 0 END AS polled,
               CASE WHEN delivered_at IS NOT NULL OR source = 'webhook' THEN 1 ELSE 0 END AS delivered
          FROM occupancy) o
  LEFT JOIN sync_state s ON s.customer_id = o.customer_id AND s.stream = 'occupancy'
 GROUP BY o.customer_id, substr(o.observed_at, 1, 10);
