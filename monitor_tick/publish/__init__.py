"""What is derived from the results for others to read: the status page, badges, Prometheus
metrics and the uptime figures they share."""
