"""What is derived from the results for others to read: the status page, badges, Prometheus
metrics and the uptime figures they share; and the --ping-url ping that tells an outside watcher
that the tick ran."""
