CREATE TABLE "buildings" (
	"customer_id" text NOT NULL,
	"id" text NOT NULL,
	"name" text NOT NULL,
	"first_seen_at" timestamp(3) with time zone NOT NULL,
	"last_seen_at" timestamp(3) with time zone NOT NULL,
	"deleted_at" timestamp(3) with time zone,
	CONSTRAINT "buildings_customer_id_id_pk" PRIMARY KEY("customer_id","id")
);
--> statement-breakpoint
CREATE TABLE "occupancy" (
	"customer_id" text NOT NULL,
	"floor_space_id" text NOT NULL,
	"observed_at" timestamp(3) with time zone NOT NULL,
	"occupancy_status" text NOT NULL,
	"headcount" integer NOT NULL,
	"source" text NOT NULL,
	"event_id" text,
	"ingested_at" timestamp(3) with time zone NOT NULL,
	CONSTRAINT "occupancy_customer_id_floor_space_id_observed_at_pk" PRIMARY KEY("customer_id","floor_space_id","observed_at"),
	CONSTRAINT "occupancy_source_known" CHECK ("occupancy"."source" IN ('poll', 'webhook')),
	CONSTRAINT "occupancy_headcount_non_negative" CHECK ("occupancy"."headcount" >= 0)
);
--> statement-breakpoint
CREATE TABLE "sync_runs" (
	"id" integer PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "sync_runs_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 2147483647 START WITH 1 CACHE 1),
	"customer_id" text NOT NULL,
	"stream" text NOT NULL,
	"mode" text NOT NULL,
	"started_at" timestamp(3) with time zone NOT NULL,
	"finished_at" timestamp(3) with time zone,
	"status" text NOT NULL,
	"pages" integer DEFAULT 0 NOT NULL,
	"records" integer DEFAULT 0 NOT NULL,
	"error" text,
	CONSTRAINT "sync_runs_mode_known" CHECK ("sync_runs"."mode" IN ('incremental', 'backfill', 'full')),
	CONSTRAINT "sync_runs_status_known" CHECK ("sync_runs"."status" IN ('running', 'succeeded', 'failed', 'interrupted'))
);
--> statement-breakpoint
CREATE TABLE "sync_state" (
	"customer_id" text NOT NULL,
	"stream" text NOT NULL,
	"watermark" timestamp(3) with time zone,
	"window_start" timestamp(3) with time zone,
	"window_end" timestamp(3) with time zone,
	"page_cursor" text,
	"range_start" timestamp(3) with time zone,
	"range_end" timestamp(3) with time zone,
	"updated_at" timestamp(3) with time zone NOT NULL,
	CONSTRAINT "sync_state_customer_id_stream_pk" PRIMARY KEY("customer_id","stream")
);
--> statement-breakpoint
CREATE TABLE "webhook_deliveries" (
	"customer_id" text NOT NULL,
	"id" text NOT NULL,
	"type" text NOT NULL,
	"created_at" timestamp(3) with time zone NOT NULL,
	"sent_at" timestamp(3) with time zone NOT NULL,
	"received_at" timestamp(3) with time zone NOT NULL,
	"attempts" integer DEFAULT 1 NOT NULL,
	"body" text NOT NULL,
	CONSTRAINT "webhook_deliveries_customer_id_id_pk" PRIMARY KEY("customer_id","id")
);
--> statement-breakpoint
CREATE INDEX "occupancy_customer_observed_idx" ON "occupancy" USING btree ("customer_id","observed_at");--> statement-breakpoint
CREATE INDEX "sync_runs_customer_stream_started_idx" ON "sync_runs" USING btree ("customer_id","stream","started_at");--> statement-breakpoint
CREATE INDEX "webhook_deliveries_customer_received_idx" ON "webhook_deliveries" USING btree ("customer_id","received_at");