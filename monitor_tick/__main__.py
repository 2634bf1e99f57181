"""`python -m monitor_tick` is the `monitor-tick` command."""

from monitor_tick.entry import main

main()
