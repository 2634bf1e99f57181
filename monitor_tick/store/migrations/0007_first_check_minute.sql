-- A new, resumed or edited monitor is checked within minutes, whatever its interval,
-- so that a mistake in a daily monitor shows the day it is made.
ALTER TABLE monitors ADD COLUMN first_check_minute INTEGER;
CREATE INDEX monitors_first_check ON monitors (first_check_minute)
 WHERE first_check_minute IS NOT NULL AND enabled = 1 AND auto_paused = 0;
