-- A floor space's pending invalidations are a row per stale range, keyed by where it starts (issue 40): a backfill of
-- several windows at once keeps each window's range apart, where one row per floor space widened to cover them all
-- made every refresh compute the days between the windows again. The rows pending now are kept as they are.
CREATE TABLE `__new_aggregate_invalidations` (
	`floor_space_key` integer NOT NULL,
	`customer_id` text NOT NULL,
	`first_ms` integer NOT NULL,
	`last_ms` integer NOT NULL,
	`revision` integer NOT NULL,
	`invalidated_at` text NOT NULL,
	PRIMARY KEY(`floor_space_key`, `first_ms`),
	CONSTRAINT "aggregate_invalidations_invalidated_at_iso" CHECK("invalidated_at" GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9].[0-9][0-9][0-9]Z')
);
--> statement-breakpoint
INSERT INTO `__new_aggregate_invalidations` ("floor_space_key", "customer_id", "first_ms", "last_ms", "revision", "invalidated_at")
SELECT "floor_space_key", "customer_id", "first_ms", "last_ms", "revision", "invalidated_at" FROM `aggregate_invalidations`;
--> statement-breakpoint
DROP TABLE `aggregate_invalidations`;
--> statement-breakpoint
ALTER TABLE `__new_aggregate_invalidations` RENAME TO `aggregate_invalidations`;
--> statement-breakpoint
CREATE INDEX `aggregate_invalidations_customer_idx` ON `aggregate_invalidations` (`customer_id`);
