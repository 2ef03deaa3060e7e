-- Reporting views, SQLite. Same names, columns and meanings as db/views/pg.sql (docs/reporting.md).
-- Timestamps are TEXT in the canonical form YYYY-MM-DDTHH:MM:SS.sssZ, so they sort and compare as times.
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
  LEFT JOIN occupancy_arrivals d ON d.arrival_key = r.delivered_arrival;
--> statement-breakpoint
-- The latest reading per customer and floor space: for each floor space, one descent of the primary key to its last
-- observation, so there is exactly one row per floor space and no scan of the readings.
CREATE VIEW occupancy_latest AS
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
       CASE WHEN r.delivered_arrival IS NULL OR r.polled_arrival < r.delivered_arrival THEN p.arrived_at ELSE d.arrived_at END AS ingested_at
  FROM floor_spaces f
  JOIN occupancy_readings r ON r.floor_space_key = f.floor_space_key
   AND r.observed_ms = (SELECT max(x.observed_ms) FROM occupancy_readings x WHERE x.floor_space_key = f.floor_space_key)
  JOIN occupancy_statuses s ON s.status_code = r.status_code
  LEFT JOIN occupancy_arrivals p ON p.arrival_key = r.polled_arrival
  LEFT JOIN occupancy_arrivals d ON d.arrival_key = r.delivered_arrival;
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
       ROUND((julianday('now') - julianday(s.watermark)) * 86400.0, 3) AS lag_seconds,
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
