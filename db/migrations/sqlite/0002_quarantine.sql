CREATE TABLE `quarantined_records` (
	`customer_id` text NOT NULL,
	`stream` text NOT NULL,
	`fingerprint` text NOT NULL,
	`window_start` text,
	`window_end` text,
	`record` text NOT NULL,
	`reason` text NOT NULL,
	`first_run_id` integer,
	`last_run_id` integer,
	`first_seen_at` text NOT NULL,
	`last_seen_at` text NOT NULL,
	`times_seen` integer DEFAULT 1 NOT NULL,
	PRIMARY KEY(`customer_id`, `stream`, `fingerprint`),
	CONSTRAINT "quarantined_records_window_start_iso" CHECK("quarantined_records"."window_start" GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9].[0-9][0-9][0-9]Z'),
	CONSTRAINT "quarantined_records_window_end_iso" CHECK("quarantined_records"."window_end" GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9].[0-9][0-9][0-9]Z'),
	CONSTRAINT "quarantined_records_first_seen_at_iso" CHECK("quarantined_records"."first_seen_at" GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9].[0-9][0-9][0-9]Z'),
	CONSTRAINT "quarantined_records_last_seen_at_iso" CHECK("quarantined_records"."last_seen_at" GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9].[0-9][0-9][0-9]Z')
);
--> statement-breakpoint
CREATE INDEX `quarantined_records_customer_seen_idx` ON `quarantined_records` (`customer_id`,`stream`,`last_seen_at`);--> statement-breakpoint
ALTER TABLE `sync_runs` ADD `rejected` integer DEFAULT 0 NOT NULL;