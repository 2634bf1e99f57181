"""The tick's orchestration, above everything it drives: tick.py (claim, select, probe, write),
fanout.py (probes in flight) and report.py (what a tick found and says). Nothing below imports it."""
