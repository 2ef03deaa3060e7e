-- A floor space's pending invalidations are a row per stale range, keyed by where it starts (issue 40): a backfill of
-- several windows at once keeps each window's range apart, where one row per floor space widened to cover them all
-- made every refresh compute the days between the windows again. The rows pending now are kept as they are.
ALTER TABLE "aggregate_invalidations" DROP CONSTRAINT "aggregate_invalidations_pkey";
--> statement-breakpoint
ALTER TABLE "aggregate_invalidations" ADD CONSTRAINT "aggregate_invalidations_pkey" PRIMARY KEY("floor_space_key","first_ms");
