"""`python -m monitor_tick` is the `monitor-tick` command."""

from monitor_tick.cli.entry import main

main()
