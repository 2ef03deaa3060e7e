CREATE TABLE `sync_last_runs` (
	`customer_id` text NOT NULL,
	`stream` text NOT NULL,
	`last_run_id` integer NOT NULL,
	`last_success_run_id` integer,
	PRIMARY KEY(`customer_id`, `stream`)
);--> statement-breakpoint
-- The runs recorded so far: the latest of each stream, and its latest success.
INSERT INTO sync_last_runs (customer_id, stream, last_run_id, last_success_run_id)
SELECT customer_id, stream, max(id), max(CASE WHEN status = 'succeeded' THEN id END)
  FROM sync_runs GROUP BY customer_id, stream;--> statement-breakpoint
DROP VIEW sync_health;--> statement-breakpoint
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
