"""monitor-tick: a one-shot uptime monitor that system cron runs every minute."""

__version__ = "0.1.0"
