CREATE TABLE `sync_state_changes` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`customer_id` text NOT NULL,
	`stream` text NOT NULL,
	`action` text NOT NULL,
	`actor` text NOT NULL,
	`changed_at` text NOT NULL,
	`old_watermark` text,
	`new_watermark` text,
	`old_state` text,
	`new_state` text,
	CONSTRAINT "sync_state_changes_changed_at_iso" CHECK("sync_state_changes"."changed_at" GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9].[0-9][0-9][0-9]Z'),
	CONSTRAINT "sync_state_changes_old_watermark_iso" CHECK("sync_state_changes"."old_watermark" GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9].[0-9][0-9][0-9]Z'),
	CONSTRAINT "sync_state_changes_new_watermark_iso" CHECK("sync_state_changes"."new_watermark" GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9].[0-9][0-9][0-9]Z'),
	CONSTRAINT "sync_state_changes_action_known" CHECK("sync_state_changes"."action" IN ('rewind', 'reset'))
);
--> statement-breakpoint
CREATE INDEX `sync_state_changes_customer_stream_idx` ON `sync_state_changes` (`customer_id`,`stream`,`changed_at`);