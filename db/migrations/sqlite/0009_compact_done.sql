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
