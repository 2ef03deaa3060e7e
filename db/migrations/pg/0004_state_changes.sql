CREATE TABLE "sync_state_changes" (
	"id" integer PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "sync_state_changes_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 2147483647 START WITH 1 CACHE 1),
	"customer_id" text NOT NULL,
	"stream" text NOT NULL,
	"action" text NOT NULL,
	"actor" text NOT NULL,
	"changed_at" timestamp(3) with time zone NOT NULL,
	"old_watermark" timestamp(3) with time zone,
	"new_watermark" timestamp(3) with time zone,
	"old_state" text,
	"new_state" text,
	CONSTRAINT "sync_state_changes_action_known" CHECK ("sync_state_changes"."action" IN ('rewind', 'reset'))
);
--> statement-breakpoint
CREATE INDEX "sync_state_changes_customer_stream_idx" ON "sync_state_changes" USING btree ("customer_id","stream","changed_at");