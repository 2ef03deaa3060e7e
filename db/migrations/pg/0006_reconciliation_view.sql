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
