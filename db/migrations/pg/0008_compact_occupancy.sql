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
CREATE TABLE "floor_spaces" (
	"floor_space_key" integer PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "floor_spaces_floor_space_key_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 2147483647 START WITH 1 CACHE 1),
	"customer_id" text NOT NULL,
	"floor_space_id" text NOT NULL,
	CONSTRAINT "floor_spaces_customer_floor_space_unique" UNIQUE("customer_id","floor_space_id")
);
--> statement-breakpoint
CREATE TABLE "occupancy_statuses" (
	"status_code" integer PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "occupancy_statuses_status_code_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 2147483647 START WITH 1 CACHE 1),
	"occupancy_status" text NOT NULL,
	CONSTRAINT "occupancy_statuses_status_unique" UNIQUE("occupancy_status")
);
--> statement-breakpoint
CREATE TABLE "occupancy_arrivals" (
	"arrival_key" integer PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "occupancy_arrivals_arrival_key_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 2147483647 START WITH 1 CACHE 1),
	"source" text NOT NULL,
	"arrived_at" timestamp (3) with time zone NOT NULL,
	CONSTRAINT "occupancy_arrivals_source_known" CHECK ("occupancy_arrivals"."source" IN ('poll', 'webhook'))
);
--> statement-breakpoint
-- Columns in storage order, widest alignment first: 64 bytes of tuple with no padding. No foreign keys (a parent
-- lookup per column per row on the hot path); the store writes keys it has just found or made.
CREATE TABLE "occupancy_readings" (
	"observed_at" timestamp (3) with time zone NOT NULL,
	"event_uuid" uuid,
	"floor_space_key" integer NOT NULL,
	"headcount" integer NOT NULL,
	"polled_arrival" integer,
	"delivered_arrival" integer,
	"status_code" integer NOT NULL,
	"event_text" text,
	CONSTRAINT "occupancy_readings_pkey" PRIMARY KEY("floor_space_key","observed_at"),
	CONSTRAINT "occupancy_readings_headcount_non_negative" CHECK ("occupancy_readings"."headcount" >= 0)
);
--> statement-breakpoint
CREATE INDEX "occupancy_readings_observed_idx" ON "occupancy_readings" USING btree ("observed_at");
--> statement-breakpoint
-- The old rows' arrivals, oldest first (a lower key is an earlier arrival), and an index to find them by source and
-- time while the rows move; 0009 drops the index.
INSERT INTO occupancy_arrivals (source, arrived_at)
SELECT src, at FROM (
  SELECT 'poll' AS src, COALESCE(polled_at, CASE WHEN source = 'poll' THEN ingested_at END) AS at FROM occupancy_legacy
  UNION
  SELECT 'webhook' AS src, COALESCE(delivered_at, CASE WHEN source = 'webhook' THEN ingested_at END) AS at FROM occupancy_legacy
) a WHERE at IS NOT NULL
ORDER BY at, src;
--> statement-breakpoint
CREATE INDEX occupancy_arrivals_legacy_idx ON occupancy_arrivals (source, arrived_at);
--> statement-breakpoint
-- The documented occupancy table, as a view over the compact tables: the same names, columns, types and meanings.
-- A reading's source and ingested_at are those of its first arrival (the lower arrival key).
CREATE VIEW occupancy AS
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
  LEFT JOIN occupancy_arrivals d ON d.arrival_key = r.delivered_arrival
UNION ALL
-- Rows not yet moved by the conversion (src/store/compact-occupancy.ts); 0009 drops this part with the old table.
SELECT customer_id, floor_space_id, observed_at, occupancy_status, headcount, source, event_id, ingested_at, polled_at,
       delivered_at
  FROM occupancy_legacy;
--> statement-breakpoint
-- The latest reading per customer and floor space (DISTINCT ON walks the primary key index backwards).
CREATE VIEW occupancy_latest AS
SELECT DISTINCT ON (customer_id, floor_space_id)
       customer_id, floor_space_id, observed_at, occupancy_status, headcount, source, event_id, ingested_at
  FROM occupancy
 ORDER BY customer_id, floor_space_id, observed_at DESC;
--> statement-breakpoint
-- Per customer, floor space and UTC hour. hour is the start of the UTC hour whatever the session TimeZone
-- (date_trunc on a timestamptz would truncate in the session zone, wrong for half-hour offsets).
CREATE VIEW occupancy_hourly AS
SELECT customer_id, floor_space_id,
       date_trunc('hour', observed_at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' AS hour,
       count(*)::integer AS readings,
       (count(*) FILTER (WHERE occupancy_status = 'CurrentlyOccupied'))::integer AS occupied_readings,
       sum(headcount)::bigint AS total_headcount,
       avg(headcount)::double precision AS avg_headcount,
       max(headcount) AS peak_headcount,
       avg(CASE WHEN occupancy_status = 'CurrentlyOccupied' THEN 1.0 ELSE 0.0 END)::double precision AS occupied_share
  FROM occupancy
 GROUP BY customer_id, floor_space_id, date_trunc('hour', observed_at AT TIME ZONE 'UTC');
--> statement-breakpoint
-- Webhook and poll reconciliation, per customer and UTC day of observation. A reading counts as polled when polling
-- read it, as delivered when a webhook delivery brought it (rows stored before these columns existed: by their
-- source). missed_deliveries: polling found it, no delivery brought it. unconfirmed_deliveries: a delivery brought it,
-- polling has read past its time (the occupancy watermark) and never found it. For a customer without a webhook
-- subscription every polled reading counts as missed: read the rows of customers that have one.
CREATE VIEW webhook_reconciliation AS
SELECT o.customer_id,
       to_char(o.observed_at AT TIME ZONE 'UTC', 'YYYY-MM-DD') AS day,
       count(*) AS readings,
       count(*) FILTER (WHERE o.polled) AS polled,
       count(*) FILTER (WHERE o.delivered) AS delivered,
       count(*) FILTER (WHERE o.polled AND NOT o.delivered) AS missed_deliveries,
       count(*) FILTER (WHERE o.delivered AND NOT o.polled AND o.observed_at < s.watermark) AS unconfirmed_deliveries
  FROM (SELECT customer_id, observed_at,
               (polled_at IS NOT NULL OR source = 'poll') AS polled,
               (delivered_at IS NOT NULL OR source = 'webhook') AS delivered
          FROM occupancy) o
  LEFT JOIN sync_state s ON s.customer_id = o.customer_id AND s.stream = 'occupancy'
 GROUP BY o.customer_id, to_char(o.observed_at AT TIME ZONE 'UTC', 'YYYY-MM-DD');
