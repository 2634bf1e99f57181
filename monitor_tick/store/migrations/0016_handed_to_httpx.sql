-- A small tick's cost: a monitor whose check the fast path handed to httpx goes to httpx
-- at once next time, instead of sending its GET twice a tick.
ALTER TABLE rollups ADD COLUMN handed_at_ms   INTEGER;
