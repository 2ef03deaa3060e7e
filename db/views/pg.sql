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
--> statement-breakpoint
-- The time-weighted views (issue 39; docs/reporting.md, "Time-weighted views"), over the aggregates occupancy_buckets
-- and calendar_days. Every figure is summed in integer milliseconds first and divided last (ratios of sums).
-- space_service_days: one row per floor space and local day of its building it counts on: from its first measured
-- day (or the day it was first listed, for a listed space never measured) on, until it was soft-deleted (or its last
-- measured day, when later). Days nobody measured are rows too: coverage counts them. A space's first and last measured
-- day are the first and last keys of its daily rollup, found once per floor space (the LATERAL's OFFSET 0 keeps the
-- planner from evaluating the two descents again for every space and day).
CREATE VIEW space_service_days AS
SELECT f.floor_space_key, f.customer_id, d.building_id, f.floor_id, f.floor_space_id, f.capacity,
       d.local_date, d.weekday, d.holiday, d.time_zone, d.start_ms, d.end_ms, d.working_ms
  FROM (SELECT fs.floor_space_key, fs.customer_id, fs.building_id, fs.floor_id, fs.floor_space_id, fs.capacity,
               fs.first_seen_at, fs.deleted_at, m.first_date, m.last_date
          FROM floor_spaces fs
         CROSS JOIN LATERAL (SELECT (SELECT r.local_date FROM occupancy_days r WHERE r.floor_space_key = fs.floor_space_key ORDER BY r.local_date LIMIT 1) AS first_date,
                                    (SELECT r.local_date FROM occupancy_days r WHERE r.floor_space_key = fs.floor_space_key ORDER BY r.local_date DESC LIMIT 1) AS last_date
                             OFFSET 0) m) f
  JOIN calendar_days d ON d.customer_id = f.customer_id AND d.building_id = COALESCE(f.building_id, '')
 WHERE (d.local_date >= f.first_date OR (f.first_date IS NULL AND f.first_seen_at < to_timestamp(d.end_ms / 1000.0)))
   AND (f.deleted_at IS NULL OR f.deleted_at > to_timestamp(d.start_ms / 1000.0) OR d.local_date <= f.last_date);
--> statement-breakpoint
-- space_day_sums: the integer sums per floor space and local day (all hours, and working hours) that space_days,
-- floor_days, building_days and portfolio_days are made of, read from the daily rollup occupancy_days (the day's
-- buckets summed when they were written: a bucket belongs to the day its start is in). A day of service with no
-- bucket has no rollup row: its sums are 0 and its peaks NULL.
CREATE VIEW space_day_sums AS
SELECT s.floor_space_key, s.customer_id, s.building_id, s.floor_id, s.floor_space_id, s.capacity,
       s.local_date, s.weekday, s.holiday, s.time_zone, s.start_ms, s.end_ms,
       s.end_ms - s.start_ms AS period_ms,
       COALESCE(r.known_ms, 0) AS known_ms, COALESCE(r.occupied_ms, 0) AS occupied_ms,
       COALESCE(r.headcount_ms, 0) AS headcount_ms, COALESCE(r.headcount_known_ms, 0) AS headcount_known_ms,
       NULLIF(s.capacity, 0) * COALESCE(r.headcount_known_ms, 0) AS capacity_ms,
       CASE WHEN s.capacity > 0 THEN COALESCE(r.headcount_ms, 0) END AS capacity_headcount_ms,
       COALESCE(r.readings, 0) AS readings, r.peak_headcount,
       r.peak_headcount::float8 / NULLIF(s.capacity, 0) AS peak_utilization,
       s.working_ms, COALESCE(r.working_known_ms, 0) AS working_known_ms, COALESCE(r.working_occupied_ms, 0) AS working_occupied_ms,
       COALESCE(r.working_headcount_ms, 0) AS working_headcount_ms, COALESCE(r.working_headcount_known_ms, 0) AS working_headcount_known_ms,
       NULLIF(s.capacity, 0) * COALESCE(r.working_headcount_known_ms, 0) AS working_capacity_ms,
       CASE WHEN s.capacity > 0 THEN COALESCE(r.working_headcount_ms, 0) END AS working_capacity_headcount_ms,
       r.working_peak_headcount,
       r.working_peak_headcount::float8 / NULLIF(s.capacity, 0) AS working_peak_utilization
  FROM space_service_days s
  LEFT JOIN occupancy_days r ON r.floor_space_key = s.floor_space_key AND r.local_date = s.local_date;
--> statement-breakpoint
-- space_days: per floor space and local day, all hours and (working_*) working hours, with the names beside the ids.
CREATE VIEW space_days AS
SELECT g.customer_id, g.building_id, bl.name AS building_name, g.floor_id, fl.name AS floor_name, fl.level AS floor_level,
       g.floor_space_id, f.name AS floor_space_name, f.space_type, f.capacity, g.time_zone, g.local_date, g.weekday, g.holiday,
       to_timestamp(g.start_ms / 1000.0) AS starts_at,
       to_timestamp(g.end_ms / 1000.0) AS ends_at,
       g.period_ms::float8 / 1000 AS period_seconds, g.known_ms::float8 / 1000 AS known_seconds, g.occupied_ms::float8 / 1000 AS occupied_seconds,
       g.headcount_ms::float8 / 1000 AS headcount_seconds, g.headcount_known_ms::float8 / 1000 AS headcount_known_seconds,
       g.capacity_ms::float8 / 1000 AS capacity_seconds, g.capacity_headcount_ms::float8 / 1000 AS capacity_headcount_seconds, g.readings::int8 AS readings,
       g.known_ms::float8 / NULLIF(g.period_ms, 0) AS coverage, g.occupied_ms::float8 / NULLIF(g.known_ms, 0) AS time_used,
       g.headcount_ms::float8 / NULLIF(g.headcount_known_ms, 0) AS avg_headcount, g.peak_headcount,
       g.capacity_headcount_ms::float8 / NULLIF(g.capacity_ms, 0) AS utilization, g.peak_utilization,
       g.working_ms::float8 / 1000 AS working_seconds, g.working_known_ms::float8 / 1000 AS working_known_seconds,
       g.working_occupied_ms::float8 / 1000 AS working_occupied_seconds, g.working_headcount_ms::float8 / 1000 AS working_headcount_seconds,
       g.working_headcount_known_ms::float8 / 1000 AS working_headcount_known_seconds, g.working_capacity_ms::float8 / 1000 AS working_capacity_seconds,
       g.working_capacity_headcount_ms::float8 / 1000 AS working_capacity_headcount_seconds,
       g.working_known_ms::float8 / NULLIF(g.working_ms, 0) AS working_coverage, g.working_occupied_ms::float8 / NULLIF(g.working_known_ms, 0) AS working_time_used,
       g.working_headcount_ms::float8 / NULLIF(g.working_headcount_known_ms, 0) AS working_avg_headcount, g.working_peak_headcount,
       g.working_capacity_headcount_ms::float8 / NULLIF(g.working_capacity_ms, 0) AS working_utilization, g.working_peak_utilization
  FROM space_day_sums g
  JOIN floor_spaces f ON f.floor_space_key = g.floor_space_key
  LEFT JOIN buildings bl ON bl.customer_id = g.customer_id AND bl.id = g.building_id
  LEFT JOIN floors fl ON fl.customer_id = g.customer_id AND fl.id = g.floor_id;
--> statement-breakpoint
-- floor_days: per floor and local day; spaces = floor spaces counted that day (space_service_days).
CREATE VIEW floor_days AS
SELECT g.customer_id, g.building_id, bl.name AS building_name, g.floor_id, fl.name AS floor_name, fl.level AS floor_level,
       g.time_zone, g.local_date, g.weekday, g.holiday,
       to_timestamp(g.start_ms / 1000.0) AS starts_at, to_timestamp(g.end_ms / 1000.0) AS ends_at, g.spaces,
       g.period_ms::float8 / 1000 AS period_seconds, g.known_ms::float8 / 1000 AS known_seconds, g.occupied_ms::float8 / 1000 AS occupied_seconds,
       g.headcount_ms::float8 / 1000 AS headcount_seconds, g.headcount_known_ms::float8 / 1000 AS headcount_known_seconds,
       g.capacity_ms::float8 / 1000 AS capacity_seconds, g.capacity_headcount_ms::float8 / 1000 AS capacity_headcount_seconds, g.readings::int8 AS readings,
       g.known_ms::float8 / NULLIF(g.period_ms, 0) AS coverage, g.occupied_ms::float8 / NULLIF(g.known_ms, 0) AS time_used,
       g.headcount_ms::float8 / NULLIF(g.headcount_known_ms, 0) AS avg_headcount, g.peak_headcount,
       g.capacity_headcount_ms::float8 / NULLIF(g.capacity_ms, 0) AS utilization, g.peak_utilization,
       g.working_ms::float8 / 1000 AS working_seconds, g.working_known_ms::float8 / 1000 AS working_known_seconds,
       g.working_occupied_ms::float8 / 1000 AS working_occupied_seconds, g.working_headcount_ms::float8 / 1000 AS working_headcount_seconds,
       g.working_headcount_known_ms::float8 / 1000 AS working_headcount_known_seconds, g.working_capacity_ms::float8 / 1000 AS working_capacity_seconds,
       g.working_capacity_headcount_ms::float8 / 1000 AS working_capacity_headcount_seconds,
       g.working_known_ms::float8 / NULLIF(g.working_ms, 0) AS working_coverage, g.working_occupied_ms::float8 / NULLIF(g.working_known_ms, 0) AS working_time_used,
       g.working_headcount_ms::float8 / NULLIF(g.working_headcount_known_ms, 0) AS working_avg_headcount, g.working_peak_headcount,
       g.working_capacity_headcount_ms::float8 / NULLIF(g.working_capacity_ms, 0) AS working_utilization, g.working_peak_utilization
  FROM (SELECT s.customer_id, s.building_id, s.floor_id, s.local_date, s.weekday, s.holiday, s.time_zone,
               COUNT(*) AS spaces, MIN(s.start_ms) AS start_ms, MAX(s.end_ms) AS end_ms,
               SUM(s.period_ms) AS period_ms, SUM(s.known_ms) AS known_ms, SUM(s.occupied_ms) AS occupied_ms,
               SUM(s.headcount_ms) AS headcount_ms, SUM(s.headcount_known_ms) AS headcount_known_ms, SUM(s.capacity_ms) AS capacity_ms,
               SUM(s.capacity_headcount_ms) AS capacity_headcount_ms, SUM(s.readings) AS readings,
               MAX(s.peak_headcount) AS peak_headcount, MAX(s.peak_utilization) AS peak_utilization,
               SUM(s.working_ms) AS working_ms, SUM(s.working_known_ms) AS working_known_ms, SUM(s.working_occupied_ms) AS working_occupied_ms,
               SUM(s.working_headcount_ms) AS working_headcount_ms, SUM(s.working_headcount_known_ms) AS working_headcount_known_ms,
               SUM(s.working_capacity_ms) AS working_capacity_ms, SUM(s.working_capacity_headcount_ms) AS working_capacity_headcount_ms,
               MAX(s.working_peak_headcount) AS working_peak_headcount, MAX(s.working_peak_utilization) AS working_peak_utilization
          FROM space_day_sums s
         GROUP BY s.customer_id, s.building_id, s.floor_id, s.local_date, s.weekday, s.holiday, s.time_zone) g
  LEFT JOIN buildings bl ON bl.customer_id = g.customer_id AND bl.id = g.building_id
  LEFT JOIN floors fl ON fl.customer_id = g.customer_id AND fl.id = g.floor_id;
--> statement-breakpoint
-- building_days: per building and local day ('' : floor spaces of no known building).
CREATE VIEW building_days AS
SELECT g.customer_id, g.building_id, bl.name AS building_name, g.time_zone, g.local_date, g.weekday, g.holiday,
       to_timestamp(g.start_ms / 1000.0) AS starts_at, to_timestamp(g.end_ms / 1000.0) AS ends_at, g.spaces,
       g.period_ms::float8 / 1000 AS period_seconds, g.known_ms::float8 / 1000 AS known_seconds, g.occupied_ms::float8 / 1000 AS occupied_seconds,
       g.headcount_ms::float8 / 1000 AS headcount_seconds, g.headcount_known_ms::float8 / 1000 AS headcount_known_seconds,
       g.capacity_ms::float8 / 1000 AS capacity_seconds, g.capacity_headcount_ms::float8 / 1000 AS capacity_headcount_seconds, g.readings::int8 AS readings,
       g.known_ms::float8 / NULLIF(g.period_ms, 0) AS coverage, g.occupied_ms::float8 / NULLIF(g.known_ms, 0) AS time_used,
       g.headcount_ms::float8 / NULLIF(g.headcount_known_ms, 0) AS avg_headcount, g.peak_headcount,
       g.capacity_headcount_ms::float8 / NULLIF(g.capacity_ms, 0) AS utilization, g.peak_utilization,
       g.working_ms::float8 / 1000 AS working_seconds, g.working_known_ms::float8 / 1000 AS working_known_seconds,
       g.working_occupied_ms::float8 / 1000 AS working_occupied_seconds, g.working_headcount_ms::float8 / 1000 AS working_headcount_seconds,
       g.working_headcount_known_ms::float8 / 1000 AS working_headcount_known_seconds, g.working_capacity_ms::float8 / 1000 AS working_capacity_seconds,
       g.working_capacity_headcount_ms::float8 / 1000 AS working_capacity_headcount_seconds,
       g.working_known_ms::float8 / NULLIF(g.working_ms, 0) AS working_coverage, g.working_occupied_ms::float8 / NULLIF(g.working_known_ms, 0) AS working_time_used,
       g.working_headcount_ms::float8 / NULLIF(g.working_headcount_known_ms, 0) AS working_avg_headcount, g.working_peak_headcount,
       g.working_capacity_headcount_ms::float8 / NULLIF(g.working_capacity_ms, 0) AS working_utilization, g.working_peak_utilization
  FROM (SELECT s.customer_id, s.building_id, s.local_date, s.weekday, s.holiday, s.time_zone,
               COUNT(*) AS spaces, MIN(s.start_ms) AS start_ms, MAX(s.end_ms) AS end_ms,
               SUM(s.period_ms) AS period_ms, SUM(s.known_ms) AS known_ms, SUM(s.occupied_ms) AS occupied_ms,
               SUM(s.headcount_ms) AS headcount_ms, SUM(s.headcount_known_ms) AS headcount_known_ms, SUM(s.capacity_ms) AS capacity_ms,
               SUM(s.capacity_headcount_ms) AS capacity_headcount_ms, SUM(s.readings) AS readings,
               MAX(s.peak_headcount) AS peak_headcount, MAX(s.peak_utilization) AS peak_utilization,
               SUM(s.working_ms) AS working_ms, SUM(s.working_known_ms) AS working_known_ms, SUM(s.working_occupied_ms) AS working_occupied_ms,
               SUM(s.working_headcount_ms) AS working_headcount_ms, SUM(s.working_headcount_known_ms) AS working_headcount_known_ms,
               SUM(s.working_capacity_ms) AS working_capacity_ms, SUM(s.working_capacity_headcount_ms) AS working_capacity_headcount_ms,
               MAX(s.working_peak_headcount) AS working_peak_headcount, MAX(s.working_peak_utilization) AS working_peak_utilization
          FROM space_day_sums s
         GROUP BY s.customer_id, s.building_id, s.local_date, s.weekday, s.holiday, s.time_zone) g
  LEFT JOIN buildings bl ON bl.customer_id = g.customer_id AND bl.id = g.building_id;
--> statement-breakpoint
-- portfolio_days: per customer and local date, every building on its own local day of that date.
CREATE VIEW portfolio_days AS
SELECT g.customer_id, g.local_date, g.weekday, g.buildings, g.spaces,
       g.period_ms::float8 / 1000 AS period_seconds, g.known_ms::float8 / 1000 AS known_seconds, g.occupied_ms::float8 / 1000 AS occupied_seconds,
       g.headcount_ms::float8 / 1000 AS headcount_seconds, g.headcount_known_ms::float8 / 1000 AS headcount_known_seconds,
       g.capacity_ms::float8 / 1000 AS capacity_seconds, g.capacity_headcount_ms::float8 / 1000 AS capacity_headcount_seconds, g.readings::int8 AS readings,
       g.known_ms::float8 / NULLIF(g.period_ms, 0) AS coverage, g.occupied_ms::float8 / NULLIF(g.known_ms, 0) AS time_used,
       g.headcount_ms::float8 / NULLIF(g.headcount_known_ms, 0) AS avg_headcount, g.peak_headcount,
       g.capacity_headcount_ms::float8 / NULLIF(g.capacity_ms, 0) AS utilization, g.peak_utilization,
       g.working_ms::float8 / 1000 AS working_seconds, g.working_known_ms::float8 / 1000 AS working_known_seconds,
       g.working_occupied_ms::float8 / 1000 AS working_occupied_seconds, g.working_headcount_ms::float8 / 1000 AS working_headcount_seconds,
       g.working_headcount_known_ms::float8 / 1000 AS working_headcount_known_seconds, g.working_capacity_ms::float8 / 1000 AS working_capacity_seconds,
       g.working_capacity_headcount_ms::float8 / 1000 AS working_capacity_headcount_seconds,
       g.working_known_ms::float8 / NULLIF(g.working_ms, 0) AS working_coverage, g.working_occupied_ms::float8 / NULLIF(g.working_known_ms, 0) AS working_time_used,
       g.working_headcount_ms::float8 / NULLIF(g.working_headcount_known_ms, 0) AS working_avg_headcount, g.working_peak_headcount,
       g.working_capacity_headcount_ms::float8 / NULLIF(g.working_capacity_ms, 0) AS working_utilization, g.working_peak_utilization
  FROM (SELECT s.customer_id, s.local_date, s.weekday, COUNT(DISTINCT s.building_id) AS buildings,
               COUNT(*) AS spaces, MIN(s.start_ms) AS start_ms, MAX(s.end_ms) AS end_ms,
               SUM(s.period_ms) AS period_ms, SUM(s.known_ms) AS known_ms, SUM(s.occupied_ms) AS occupied_ms,
               SUM(s.headcount_ms) AS headcount_ms, SUM(s.headcount_known_ms) AS headcount_known_ms, SUM(s.capacity_ms) AS capacity_ms,
               SUM(s.capacity_headcount_ms) AS capacity_headcount_ms, SUM(s.readings) AS readings,
               MAX(s.peak_headcount) AS peak_headcount, MAX(s.peak_utilization) AS peak_utilization,
               SUM(s.working_ms) AS working_ms, SUM(s.working_known_ms) AS working_known_ms, SUM(s.working_occupied_ms) AS working_occupied_ms,
               SUM(s.working_headcount_ms) AS working_headcount_ms, SUM(s.working_headcount_known_ms) AS working_headcount_known_ms,
               SUM(s.working_capacity_ms) AS working_capacity_ms, SUM(s.working_capacity_headcount_ms) AS working_capacity_headcount_ms,
               MAX(s.working_peak_headcount) AS working_peak_headcount, MAX(s.working_peak_utilization) AS working_peak_utilization
          FROM space_day_sums s
         GROUP BY s.customer_id, s.local_date, s.weekday) g;
--> statement-breakpoint
-- space_hours: per floor space and bucket (a local hour, cut where working time starts or ends inside it) that holds
-- data. An hour nobody measured has no row (it is unknown): the day views count it.
CREATE VIEW space_hours AS
SELECT f.customer_id, COALESCE(f.building_id, '') AS building_id, bl.name AS building_name, f.floor_id, fl.name AS floor_name,
       fl.level AS floor_level, f.floor_space_id, f.name AS floor_space_name, f.space_type, f.capacity, c.time_zone,
       to_timestamp(b.start_ms / 1000.0) AS starts_at, to_timestamp(b.end_ms / 1000.0) AS ends_at,
       b.local_date, b.local_hour, b.weekday, b.working,
       (b.end_ms - b.start_ms)::float8 / 1000 AS period_seconds, b.known_ms::float8 / 1000 AS known_seconds, b.occupied_ms::float8 / 1000 AS occupied_seconds,
       b.headcount_ms::float8 / 1000 AS headcount_seconds, b.headcount_known_ms::float8 / 1000 AS headcount_known_seconds,
       NULLIF(f.capacity, 0) * b.headcount_known_ms::float8 / 1000 AS capacity_seconds,
       CASE WHEN f.capacity > 0 THEN b.headcount_ms::float8 / 1000 END AS capacity_headcount_seconds, b.readings,
       b.known_ms::float8 / (b.end_ms - b.start_ms) AS coverage, b.occupied_ms::float8 / NULLIF(b.known_ms, 0) AS time_used,
       b.headcount_ms::float8 / NULLIF(b.headcount_known_ms, 0) AS avg_headcount, b.peak_headcount,
       b.headcount_ms::float8 / (NULLIF(f.capacity, 0) * NULLIF(b.headcount_known_ms, 0)) AS utilization,
       b.peak_headcount::float8 / NULLIF(f.capacity, 0) AS peak_utilization
  FROM occupancy_buckets b
  JOIN floor_spaces f ON f.floor_space_key = b.floor_space_key
  LEFT JOIN buildings bl ON bl.customer_id = f.customer_id AND bl.id = f.building_id
  LEFT JOIN floors fl ON fl.customer_id = f.customer_id AND fl.id = f.floor_id
  LEFT JOIN aggregate_calendars c ON c.customer_id = f.customer_id AND c.building_id = COALESCE(f.building_id, '');
--> statement-breakpoint
-- floor_day_spaces and building_day_spaces: the floor spaces counted (space_service_days) per floor (building) and
-- local date, the denominator the hour views join to each bucket. Views of their own so that the count has one
-- definition: the report's weekday x hour profiles (src/store/report-queries.ts, reportProfileRows) read them with
-- their own local_date range, customer, building and floor, which both planners push down to calendar_days; read
-- through floor_hours or building_hour_sums they are counted for every date stored (neither planner carries the
-- range asked of the hour rows across the LEFT JOIN into a grouped count).
CREATE VIEW floor_day_spaces AS
SELECT s.customer_id, s.building_id, s.local_date, COALESCE(s.floor_id, '') AS floor_key, s.floor_id, COUNT(*) AS spaces
  FROM space_service_days s
 GROUP BY s.customer_id, s.building_id, s.local_date, COALESCE(s.floor_id, ''), s.floor_id;
--> statement-breakpoint
CREATE VIEW building_day_spaces AS
SELECT s.customer_id, s.building_id, s.local_date, COUNT(*) AS spaces
  FROM space_service_days s
 GROUP BY s.customer_id, s.building_id, s.local_date;
--> statement-breakpoint
-- floor_hours: per floor and bucket that a floor space of it measured, read from the floor-level hourly rollup
-- occupancy_floor_hours (src/store/aggregate-floors.ts); period = the floor's spaces counted that day
-- (floor_day_spaces, counted once per floor and local date and joined) x the bucket's length, so a silent space
-- lowers coverage.
CREATE VIEW floor_hours AS
SELECT g.customer_id, g.building_id, bl.name AS building_name, g.floor_id, fl.name AS floor_name, fl.level AS floor_level,
       c.time_zone, to_timestamp(g.start_ms / 1000.0) AS starts_at, to_timestamp(g.end_ms / 1000.0) AS ends_at,
       g.local_date, g.local_hour, g.weekday, g.working, g.spaces,
       g.period_ms::float8 / 1000 AS period_seconds, g.known_ms::float8 / 1000 AS known_seconds, g.occupied_ms::float8 / 1000 AS occupied_seconds,
       g.headcount_ms::float8 / 1000 AS headcount_seconds, g.headcount_known_ms::float8 / 1000 AS headcount_known_seconds,
       g.capacity_ms::float8 / 1000 AS capacity_seconds, g.capacity_headcount_ms::float8 / 1000 AS capacity_headcount_seconds, g.readings::int8 AS readings,
       g.known_ms::float8 / NULLIF(g.period_ms, 0) AS coverage, g.occupied_ms::float8 / NULLIF(g.known_ms, 0) AS time_used,
       g.headcount_ms::float8 / NULLIF(g.headcount_known_ms, 0) AS avg_headcount, g.peak_headcount,
       g.capacity_headcount_ms::float8 / NULLIF(g.capacity_ms, 0) AS utilization, g.peak_utilization
  FROM (SELECT x.*, x.spaces * (x.end_ms - x.start_ms) AS period_ms
          FROM (SELECT y.*, COALESCE(n.spaces, 0) AS spaces
                  FROM (SELECT h.customer_id, h.building_id, h.floor_id, h.floor_key, h.start_ms, h.end_ms, h.local_date, h.local_hour, h.weekday, h.working,
                               h.known_ms, h.occupied_ms, h.headcount_ms, h.headcount_known_ms, h.capacity_ms, h.capacity_headcount_ms, h.readings,
                               h.peak_headcount, h.peak_utilization
                          FROM occupancy_floor_hours h) y
                  LEFT JOIN floor_day_spaces n
                    ON n.customer_id = y.customer_id AND n.building_id = y.building_id AND n.local_date = y.local_date
                   AND n.floor_key = y.floor_key AND n.floor_id IS NOT DISTINCT FROM y.floor_id) x) g
  LEFT JOIN buildings bl ON bl.customer_id = g.customer_id AND bl.id = g.building_id
  LEFT JOIN floors fl ON fl.customer_id = g.customer_id AND fl.id = g.floor_id
  LEFT JOIN aggregate_calendars c ON c.customer_id = g.customer_id AND c.building_id = g.building_id;
--> statement-breakpoint
-- building_hour_sums: the integer sums per building and bucket that building_hours, portfolio_hours and usage_profile
-- are made of, summed from the floor-level hourly rollup's rows of the building; period_ms = the building's floor spaces counted that day (building_day_spaces, once per building and local date, joined)
-- x the bucket's length.
CREATE VIEW building_hour_sums AS
SELECT x.*, x.spaces * (x.end_ms - x.start_ms) AS period_ms
  FROM (SELECT y.*, COALESCE(n.spaces, 0) AS spaces
          FROM (SELECT h.customer_id, h.building_id, h.start_ms, MAX(h.end_ms) AS end_ms,
                       h.local_date, h.local_hour, h.weekday, h.working,
               SUM(h.known_ms) AS known_ms, SUM(h.occupied_ms) AS occupied_ms, SUM(h.headcount_ms) AS headcount_ms,
               SUM(h.headcount_known_ms) AS headcount_known_ms, SUM(h.capacity_ms) AS capacity_ms,
               SUM(h.capacity_headcount_ms) AS capacity_headcount_ms, SUM(h.readings)::int8 AS readings,
               MAX(h.peak_headcount) AS peak_headcount, MAX(h.peak_utilization) AS peak_utilization
                  FROM occupancy_floor_hours h
                 GROUP BY h.customer_id, h.building_id, h.start_ms, h.local_date, h.local_hour, h.weekday, h.working) y
          LEFT JOIN building_day_spaces n
            ON n.customer_id = y.customer_id AND n.building_id = y.building_id AND n.local_date = y.local_date) x;
--> statement-breakpoint
-- building_hours: per building and bucket that a floor space of it measured.
CREATE VIEW building_hours AS
SELECT g.customer_id, g.building_id, bl.name AS building_name, c.time_zone, to_timestamp(g.start_ms / 1000.0) AS starts_at, to_timestamp(g.end_ms / 1000.0) AS ends_at,
       g.local_date, g.local_hour, g.weekday, g.working, g.spaces,
       g.period_ms::float8 / 1000 AS period_seconds, g.known_ms::float8 / 1000 AS known_seconds, g.occupied_ms::float8 / 1000 AS occupied_seconds,
       g.headcount_ms::float8 / 1000 AS headcount_seconds, g.headcount_known_ms::float8 / 1000 AS headcount_known_seconds,
       g.capacity_ms::float8 / 1000 AS capacity_seconds, g.capacity_headcount_ms::float8 / 1000 AS capacity_headcount_seconds, g.readings::int8 AS readings,
       g.known_ms::float8 / NULLIF(g.period_ms, 0) AS coverage, g.occupied_ms::float8 / NULLIF(g.known_ms, 0) AS time_used,
       g.headcount_ms::float8 / NULLIF(g.headcount_known_ms, 0) AS avg_headcount, g.peak_headcount,
       g.capacity_headcount_ms::float8 / NULLIF(g.capacity_ms, 0) AS utilization, g.peak_utilization
  FROM building_hour_sums g
  LEFT JOIN buildings bl ON bl.customer_id = g.customer_id AND bl.id = g.building_id
  LEFT JOIN aggregate_calendars c ON c.customer_id = g.customer_id AND c.building_id = g.building_id;
--> statement-breakpoint
-- portfolio_hours: per customer, local date, local hour and working or not, every building in its own local time.
-- A building's buckets of one local hour (two in the hour a DST change repeats) are summed first, so its floor
-- spaces count once in `spaces`; the period is both buckets'.
CREATE VIEW portfolio_hours AS
SELECT g.customer_id, g.local_date, g.local_hour, g.weekday, g.working, g.buildings, g.spaces,
       g.period_ms::float8 / 1000 AS period_seconds, g.known_ms::float8 / 1000 AS known_seconds, g.occupied_ms::float8 / 1000 AS occupied_seconds,
       g.headcount_ms::float8 / 1000 AS headcount_seconds, g.headcount_known_ms::float8 / 1000 AS headcount_known_seconds,
       g.capacity_ms::float8 / 1000 AS capacity_seconds, g.capacity_headcount_ms::float8 / 1000 AS capacity_headcount_seconds, g.readings::int8 AS readings,
       g.known_ms::float8 / NULLIF(g.period_ms, 0) AS coverage, g.occupied_ms::float8 / NULLIF(g.known_ms, 0) AS time_used,
       g.headcount_ms::float8 / NULLIF(g.headcount_known_ms, 0) AS avg_headcount, g.peak_headcount,
       g.capacity_headcount_ms::float8 / NULLIF(g.capacity_ms, 0) AS utilization, g.peak_utilization
  FROM (SELECT h.customer_id, h.local_date, h.local_hour, h.weekday, h.working, COUNT(DISTINCT h.building_id) AS buildings,
               SUM(h.spaces) AS spaces, SUM(h.period_ms) AS period_ms, SUM(h.known_ms) AS known_ms, SUM(h.occupied_ms) AS occupied_ms, SUM(h.headcount_ms) AS headcount_ms,
               SUM(h.headcount_known_ms) AS headcount_known_ms, SUM(h.capacity_ms) AS capacity_ms, SUM(h.capacity_headcount_ms) AS capacity_headcount_ms,
               SUM(h.readings) AS readings, MAX(h.peak_headcount) AS peak_headcount, MAX(h.peak_utilization) AS peak_utilization
          FROM (SELECT b.customer_id, b.building_id, b.local_date, b.local_hour, b.weekday, b.working, MAX(b.spaces) AS spaces,
                       SUM(b.period_ms) AS period_ms, SUM(b.known_ms) AS known_ms, SUM(b.occupied_ms) AS occupied_ms, SUM(b.headcount_ms) AS headcount_ms,
                       SUM(b.headcount_known_ms) AS headcount_known_ms, SUM(b.capacity_ms) AS capacity_ms, SUM(b.capacity_headcount_ms) AS capacity_headcount_ms,
                       SUM(b.readings) AS readings, MAX(b.peak_headcount) AS peak_headcount, MAX(b.peak_utilization) AS peak_utilization
                  FROM building_hour_sums b
                 GROUP BY b.customer_id, b.building_id, b.local_date, b.local_hour, b.weekday, b.working) h
         GROUP BY h.customer_id, h.local_date, h.local_hour, h.weekday, h.working) g;
--> statement-breakpoint
-- usage_profile: per building, ISO weekday and local hour, in working hours, over every day the aggregates hold.
CREATE VIEW usage_profile AS
SELECT g.customer_id, g.building_id, bl.name AS building_name, c.time_zone, g.weekday, g.local_hour, g.days,
       g.period_ms::float8 / 1000 AS period_seconds, g.known_ms::float8 / 1000 AS known_seconds, g.occupied_ms::float8 / 1000 AS occupied_seconds,
       g.headcount_ms::float8 / 1000 AS headcount_seconds, g.headcount_known_ms::float8 / 1000 AS headcount_known_seconds,
       g.capacity_ms::float8 / 1000 AS capacity_seconds, g.capacity_headcount_ms::float8 / 1000 AS capacity_headcount_seconds, g.readings::int8 AS readings,
       g.known_ms::float8 / NULLIF(g.period_ms, 0) AS coverage, g.occupied_ms::float8 / NULLIF(g.known_ms, 0) AS time_used,
       g.headcount_ms::float8 / NULLIF(g.headcount_known_ms, 0) AS avg_headcount, g.peak_headcount,
       g.capacity_headcount_ms::float8 / NULLIF(g.capacity_ms, 0) AS utilization, g.peak_utilization
  FROM (SELECT h.customer_id, h.building_id, h.weekday, h.local_hour, COUNT(DISTINCT h.local_date) AS days,
               SUM(h.period_ms) AS period_ms, SUM(h.known_ms) AS known_ms, SUM(h.occupied_ms) AS occupied_ms, SUM(h.headcount_ms) AS headcount_ms,
               SUM(h.headcount_known_ms) AS headcount_known_ms, SUM(h.capacity_ms) AS capacity_ms, SUM(h.capacity_headcount_ms) AS capacity_headcount_ms,
               SUM(h.readings) AS readings, MAX(h.peak_headcount) AS peak_headcount, MAX(h.peak_utilization) AS peak_utilization
          FROM building_hour_sums h
         WHERE h.working
         GROUP BY h.customer_id, h.building_id, h.weekday, h.local_hour) g
  LEFT JOIN buildings bl ON bl.customer_id = g.customer_id AND bl.id = g.building_id
  LEFT JOIN aggregate_calendars c ON c.customer_id = g.customer_id AND c.building_id = g.building_id;
--> statement-breakpoint
-- busiest_hours: usage_profile ranked per building, busiest first: by average headcount (time used where no headcount
-- is known), then time used, then weekday and hour. rank = 1 is the building's busiest hour.
CREATE VIEW busiest_hours AS
SELECT p.*, ROW_NUMBER() OVER (PARTITION BY p.customer_id, p.building_id
                               ORDER BY p.avg_headcount IS NULL, p.avg_headcount DESC, p.time_used IS NULL, p.time_used DESC, p.weekday, p.local_hour) AS rank
  FROM usage_profile p;
