CREATE TABLE `buildings` (
	`customer_id` text NOT NULL,
	`id` text NOT NULL,
	`name` text NOT NULL,
	`first_seen_at` text NOT NULL,
	`last_seen_at` text NOT NULL,
	`deleted_at` text,
	PRIMARY KEY(`customer_id`, `id`),
	CONSTRAINT "buildings_first_seen_at_iso" CHECK("buildings"."first_seen_at" GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9].[0-9][0-9][0-9]Z'),
	CONSTRAINT "buildings_last_seen_at_iso" CHECK("buildings"."last_seen_at" GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9].[0-9][0-9][0-9]Z'),
	CONSTRAINT "buildings_deleted_at_iso" CHECK("buildings"."deleted_at" GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9].[0-9][0-9][0-9]Z')
);
--> statement-breakpoint
CREATE TABLE `occupancy` (
	`customer_id` text NOT NULL,
	`floor_space_id` text NOT NULL,
	`observed_at` text NOT NULL,
	`occupancy_status` text NOT NULL,
	`headcount` integer NOT NULL,
	`source` text NOT NULL,
	`event_id` text,
	`ingested_at` text NOT NULL,
	PRIMARY KEY(`customer_id`, `floor_space_id`, `observed_at`),
	CONSTRAINT "occupancy_observed_at_iso" CHECK("occupancy"."observed_at" GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9].[0-9][0-9][0-9]Z'),
	CONSTRAINT "occupancy_ingested_at_iso" CHECK("occupancy"."ingested_at" GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9].[0-9][0-9][0-9]Z'),
	CONSTRAINT "occupancy_source_known" CHECK("occupancy"."source" IN ('poll', 'webhook')),
	CONSTRAINT "occupancy_headcount_non_negative" CHECK("occupancy"."headcount" >= 0)
);
--> statement-breakpoint
CREATE INDEX `occupancy_customer_observed_idx` ON `occupancy` (`customer_id`,`observed_at`);--> statement-breakpoint
CREATE TABLE `sync_locks` (
	`customer_id` text NOT NULL,
	`stream` text NOT NULL,
	`holder_pid` integer NOT NULL,
	`holder_host` text NOT NULL,
	`holder_start` text,
	`token` text NOT NULL,
	`acquired_at` text NOT NULL,
	PRIMARY KEY(`customer_id`, `stream`),
	CONSTRAINT "sync_locks_acquired_at_iso" CHECK("sync_locks"."acquired_at" GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9].[0-9][0-9][0-9]Z')
);
--> statement-breakpoint
CREATE TABLE `sync_runs` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`customer_id` text NOT NULL,
	`stream` text NOT NULL,
	`mode` text NOT NULL,
	`started_at` text NOT NULL,
	`finished_at` text,
	`status` text NOT NULL,
	`pages` integer DEFAULT 0 NOT NULL,
	`records` integer DEFAULT 0 NOT NULL,
	`error` text,
	CONSTRAINT "sync_runs_started_at_iso" CHECK("sync_runs"."started_at" GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9].[0-9][0-9][0-9]Z'),
	CONSTRAINT "sync_runs_finished_at_iso" CHECK("sync_runs"."finished_at" GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9].[0-9][0-9][0-9]Z'),
	CONSTRAINT "sync_runs_mode_known" CHECK("sync_runs"."mode" IN ('incremental', 'backfill', 'full')),
	CONSTRAINT "sync_runs_status_known" CHECK("sync_runs"."status" IN ('running', 'succeeded', 'failed', 'interrupted'))
);
--> statement-breakpoint
CREATE INDEX `sync_runs_customer_stream_started_idx` ON `sync_runs` (`customer_id`,`stream`,`started_at`);--> statement-breakpoint
CREATE TABLE `sync_state` (
	`customer_id` text NOT NULL,
	`stream` text NOT NULL,
	`watermark` text,
	`window_start` text,
	`window_end` text,
	`page_cursor` text,
	`range_start` text,
	`range_end` text,
	`updated_at` text NOT NULL,
	PRIMARY KEY(`customer_id`, `stream`),
	CONSTRAINT "sync_state_watermark_iso" CHECK("sync_state"."watermark" GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9].[0-9][0-9][0-9]Z'),
	CONSTRAINT "sync_state_window_start_iso" CHECK("sync_state"."window_start" GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9].[0-9][0-9][0-9]Z'),
	CONSTRAINT "sync_state_window_end_iso" CHECK("sync_state"."window_end" GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9].[0-9][0-9][0-9]Z'),
	CONSTRAINT "sync_state_range_start_iso" CHECK("sync_state"."range_start" GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9].[0-9][0-9][0-9]Z'),
	CONSTRAINT "sync_state_range_end_iso" CHECK("sync_state"."range_end" GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9].[0-9][0-9][0-9]Z'),
	CONSTRAINT "sync_state_updated_at_iso" CHECK("sync_state"."updated_at" GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9].[0-9][0-9][0-9]Z')
);
--> statement-breakpoint
CREATE TABLE `webhook_deliveries` (
	`customer_id` text NOT NULL,
	`id` text NOT NULL,
	`type` text NOT NULL,
	`created_at` text NOT NULL,
	`sent_at` text NOT NULL,
	`received_at` text NOT NULL,
	`attempts` integer DEFAULT 1 NOT NULL,
	`body` text NOT NULL,
	PRIMARY KEY(`customer_id`, `id`),
	CONSTRAINT "webhook_deliveries_created_at_iso" CHECK("webhook_deliveries"."created_at" GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9].[0-9][0-9][0-9]Z'),
	CONSTRAINT "webhook_deliveries_sent_at_iso" CHECK("webhook_deliveries"."sent_at" GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9].[0-9][0-9][0-9]Z'),
	CONSTRAINT "webhook_deliveries_received_at_iso" CHECK("webhook_deliveries"."received_at" GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9].[0-9][0-9][0-9]Z')
);
--> statement-breakpoint
CREATE INDEX `webhook_deliveries_customer_received_idx` ON `webhook_deliveries` (`customer_id`,`received_at`);