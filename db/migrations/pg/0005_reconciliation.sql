ALTER TABLE "occupancy" ADD COLUMN "polled_at" timestamp(3) with time zone;--> statement-breakpoint
ALTER TABLE "occupancy" ADD COLUMN "delivered_at" timestamp(3) with time zone;