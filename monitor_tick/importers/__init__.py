"""`monitor-tick import`: monitors from other tools (Uptime Kuma's database, Gatus' YAML).

    plan.py      what an import plans, whatever the source: monitors as `add` takes them, their
                 names, and what is not carried over and why
    channels.py  notification settings as Apprise URLs
    kuma.py      Uptime Kuma 1.23 / 2.0: its SQLite file, read-only
    gatus.py     Gatus: its YAML configuration (PyYAML, the `gatus` extra)
    apply.py     a plan checked as `add` checks, written in one transaction, and its report

Imported only by the `import` commands: never by a tick.
"""
