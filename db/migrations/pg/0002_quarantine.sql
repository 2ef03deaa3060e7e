CREATE TABLE "quarantined_records" (
	"customer_id" text NOT NULL,
	"stream" text NOT NULL,
	"fingerprint" text NOT NULL,
	"window_start" timestamp(3) with time zone,
	"window_end" timestamp(3) with time zone,
	"record" text NOT NULL,
	"reason" text NOT NULL,
	"first_run_id" integer,
	"last_run_id" integer,
	"first_seen_at" timestamp(3) with time zone NOT NULL,
	"last_seen_at" timestamp(3) with time zone NOT NULL,
	"times_seen" integer DEFAULT 1 NOT NULL,
	CONSTRAINT "quarantined_records_customer_id_stream_fingerprint_pk" PRIMARY KEY("customer_id","stream","fingerprint")
);
--> statement-breakpoint
ALTER TABLE "sync_runs" ADD COLUMN "rejected" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
CREATE INDEX "quarantined_records_customer_seen_idx" ON "quarantined_records" USING btree ("customer_id","stream","last_seen_at");