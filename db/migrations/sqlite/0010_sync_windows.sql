-- Windows of a stream read at the same time (issue 25): besides the first incomplete window (window_start, window_end,
-- page_cursor), the state keeps the progress of the windows after it (their bounds, cursor, done), as JSON, so a run
-- stopped at any page resumes each of them where it was. Written by hand, as 0008 and 0009 are (drizzle-kit has no
-- snapshot past 0007).
ALTER TABLE sync_state ADD COLUMN windows text;
