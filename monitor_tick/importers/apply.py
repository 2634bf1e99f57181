"""A plan checked as `add` checks a monitor, then written in one transaction (or, for --dry-run,
only compared with the database), and the report of what happened to each monitor.

Reports never show a secret: URLs and channel URLs go through core/redact.py, and notes name
settings, never their values.
"""

from __future__ import annotations

from dataclasses import dataclass

from monitor_tick import store
from monitor_tick.alerts import notify
from monitor_tick.core.clock import format_duration_s
from monitor_tick.core.model import InvalidMonitor, check_alert_settings
from monitor_tick.core.redact import redact_channel_url, redact_url
from monitor_tick.importers.plan import Plan, Planned
from monitor_tick.probes import PROBES, fleet_refusal, new_monitor
from monitor_tick.probes.heartbeat import token_digest


@dataclass(frozen=True)
class Summary:
    added: int
    existing: int
    skipped: int
    channels: int


def checked(plan: Plan, hosts: int = 1) -> list[tuple[Planned, store.ImportedMonitor]]:
    """The plan's monitors that `add` would take, as the store adds them, into a database that
    `hosts` hosts tick (store.fleet_hosts); the others move to plan.skipped with `add`'s reason,
    and channels Apprise cannot use become notes."""
    usable: list[tuple[Planned, store.ImportedMonitor]] = []
    for planned in plan.monitors:
        try:
            monitor = new_monitor(
                name=planned.name,
                url=planned.url,
                interval_sec=planned.interval_sec,
                aligned=False,
                given=planned.given,
                group_name=planned.group,
            )
            alerts = check_alert_settings(planned.alerts)
        except InvalidMonitor as exc:
            plan.skipped.append((planned.name, f"cannot be added: {exc}"))
            continue
        refused = fleet_refusal(monitor, hosts)
        if refused:
            plan.skipped.append((planned.name, f"cannot be added here: {refused}"))
            continue
        channels = []
        for label, url in planned.channels:
            if notify.is_valid_url(url):
                channels.append(url)
            else:
                planned.notes.append(f"channel {label}: Apprise cannot use {redact_channel_url(url)}")
        digest = token_digest(planned.token) if planned.token is not None else None
        if PROBES[monitor.kind].pinged and digest is None:
            plan.skipped.append((planned.name, "a heartbeat without a token"))
            continue
        usable.append((planned, store.ImportedMonitor(monitor, alerts, planned.enabled, digest, tuple(channels))))
    return usable


def run(
    conn: store.Connection | None, plan: Plan, now_ms: int, *, dry_run: bool, to_file: bool = False
) -> tuple[list[str], Summary]:
    """Import the plan (with `dry_run`, only say what would happen; `conn` None: no database
    yet, so nothing exists; `to_file`: `conn` is a scratch database that becomes a monitors file,
    so its ids are not reported). Returns the report's lines and its figures."""
    usable = checked(plan, store.fleet_hosts(conn) if conn is not None and not to_file else 1)
    items = [item for _, item in usable]
    # before the import: which names were there already (for the report's reasons)
    names = store.existing_names(conn, [i.monitor.name for i in items]) if conn else set()
    if dry_run:
        digests = [i.token_sha256 for i in items if i.token_sha256 is not None]
        tokens = store.taken_tokens(conn, digests) if conn else set()
        ids: list[int | None] = [None if i.monitor.name in names or i.token_sha256 in tokens else 0 for i in items]
    else:
        assert conn is not None
        ids = store.import_monitors(conn, items, now_ms)
    lines = [f"{plan.source}:"]
    added = channels = 0
    verb = "would add" if dry_run else "written" if to_file else "added"
    for (planned, item), new_id in zip(usable, ids, strict=True):
        monitor = item.monitor
        if new_id is None:
            why = "a monitor of that name" if monitor.name in names else "a monitor with that token"
            lines.append(f"  exists    {monitor.name}: {why} is already there; left as is")
            continue
        added += 1
        channels += len(item.channels)
        where = "" if dry_run or to_file else f" (monitor {new_id})"
        every = format_duration_s(monitor.interval_sec)
        state = "" if item.enabled else ", paused"
        lines.append(f"  {verb:<9} {monitor.name}{where}: {redact_url(monitor.url)} every {every}{state}")
        if planned.renamed_because:
            lines.append(f"            - renamed from {planned.source_name!r}: {planned.renamed_because}")
        if monitor.group_name:
            lines.append(f"            - group {monitor.group_name}")
        for url in item.channels:
            lines.append(f"            - channel {redact_channel_url(url)}")
        for note in planned.notes:
            lines.append(f"            - {note}")
    for name, reason in plan.skipped:
        lines.append(f"  skipped   {name}: {reason}")
    for note in plan.notes:
        lines.append(f"  note: {note}")
    summary = Summary(added, len(ids) - added, len(plan.skipped), channels)
    lines.append(
        f"{summary.added} {'to add' if dry_run else 'written' if to_file else 'added'}, "
        f"{summary.existing} already there, "
        f"{summary.skipped} skipped, {summary.channels} channel{'s' if summary.channels != 1 else ''}"
        + (" (dry run: nothing written)" if dry_run else "")
    )
    return lines, summary
