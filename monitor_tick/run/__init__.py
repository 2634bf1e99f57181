"""The tick's orchestration, above everything it drives: tick.py (claim, select, probe, write)
and fanout.py (probes in flight). Nothing below imports it."""
