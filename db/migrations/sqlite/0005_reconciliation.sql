-- Added in place (no table rewrite): rows stored before this migration keep NULL, and the reconciliation view reads
-- their source column instead.
ALTER TABLE `occupancy` ADD `polled_at` text CONSTRAINT "occupancy_polled_at_iso" CHECK("polled_at" GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9].[0-9][0-9][0-9]Z');--> statement-breakpoint
ALTER TABLE `occupancy` ADD `delivered_at` text CONSTRAINT "occupancy_delivered_at_iso" CHECK("delivered_at" GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9].[0-9][0-9][0-9]Z');
