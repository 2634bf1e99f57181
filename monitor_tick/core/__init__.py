"""The leaves: the clock, the pure schedule and incident rules, redaction, and the values that
cross module borders (model). They import nothing of monitor_tick's above them."""
