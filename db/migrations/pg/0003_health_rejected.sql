-- sync_health gains last_run_rejected: records of the latest run that went to quarantined_records.
DROP VIEW sync_health;
--> statement-breakpoint
-- Per customer and stream (state key): watermark, how far behind now it is, and the latest run.
-- A key appears when it has state or runs. lag_seconds is NULL until the stream has a watermark.
CREATE VIEW sync_health AS
WITH keys AS (
  SELECT customer_id, stream FROM sync_state
  UNION
  SELECT customer_id, stream FROM sync_runs
),
ranked AS (
  SELECT r.*, row_number() OVER (PARTITION BY customer_id, stream ORDER BY started_at DESC, id DESC) AS rn
    FROM sync_runs r
),
succeeded AS (
  SELECT customer_id, stream, max(finished_at) AS last_success_at
    FROM sync_runs WHERE status = 'succeeded' GROUP BY customer_id, stream
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
       ok.last_success_at
  FROM keys k
  LEFT JOIN sync_state s ON s.customer_id = k.customer_id AND s.stream = k.stream
  LEFT JOIN ranked r ON r.customer_id = k.customer_id AND r.stream = k.stream AND r.rn = 1
  LEFT JOIN succeeded ok ON ok.customer_id = k.customer_id AND ok.stream = k.stream;
