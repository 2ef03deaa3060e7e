-- The conversion has moved every row (the store checks occupancy_legacy is empty before this runs): drop the old
-- table and show the compact tables alone.
DROP VIEW webhook_reconciliation;
--> statement-breakpoint
DROP VIEW occupancy_hourly;
--> statement-breakpoint
DROP VIEW occupancy_latest;
--> statement-breakpoint
DROP VIEW occupancy;
--> statement-breakpoint
DROP TABLE occupancy_legacy;
--> statement-breakpoint
DROP INDEX occupancy_arrivals_legacy_idx;
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
  LEFT JOIN occupancy_arrivals d ON d.arrival_key = r.delivered_arrival;
--> statement-breakpoint
-- The latest reading per customer and floor space: for each floor space, one descent of the primary key to its last
-- observation (LATERAL ... LIMIT 1), so there is exactly one row per floor space and no scan of the readings.
CREATE VIEW occupancy_latest AS
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
