-- Reporting views, Postgres. Same names, columns and meanings as db/views/sqlite.sql (docs/reporting.md).
-- Timestamps are timestamptz. Unqualified names: the views land in the schema the migration runs in.
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
-- Per customer and stream (state key): watermark, how far behind now it is, and the latest run.
-- A key appears when it has state or runs. lag_seconds is NULL until the stream has a watermark. The latest run and
-- the latest successful one come from sync_last_runs (one row per stream), so the view stays fast however many runs
-- sync_runs holds.
CREATE VIEW sync_health AS
WITH keys AS (
  SELECT customer_id, stream FROM sync_state
  UNION
  SELECT customer_id, stream FROM sync_last_runs
)
SELECT k.customer_id, k.stream,
       s.watermark,
       round(EXTRACT(EPOCH FROM (now() - s.watermark))::numeric, 3)::double precision AS lag_seconds,
       s.updated_at AS state_updated_at,
       r.id AS last_run_id,
       r.mode AS last_run_mode,
       r.status AS last_run_status,
       r.started_at AS last_run_started_at,
       r.finished_at AS last_run_finished_at,
       r.pages AS last_run_pages,
       r.records AS last_run_records,
       r.rejected AS last_run_rejected,
       r.error AS last_run_error,
       ok.finished_at AS last_success_at
  FROM keys k
  LEFT JOIN sync_state s ON s.customer_id = k.customer_id AND s.stream = k.stream
  LEFT JOIN sync_last_runs l ON l.customer_id = k.customer_id AND l.stream = k.stream
  LEFT JOIN sync_runs r ON r.id = l.last_run_id
  LEFT JOIN sync_runs ok ON ok.id = l.last_success_run_id;
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
