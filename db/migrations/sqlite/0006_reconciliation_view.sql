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
