"""`monitor-tick notify ...`: where notifications go (Apprise URLs), and the network canary.

Channel URLs hold secrets: every output shows them through redact_channel_url.
"""

from __future__ import annotations

from typing import Annotated

import typer

from monitor_tick import store
from monitor_tick.alerts import notify, policy
from monitor_tick.cli import deferred
from monitor_tick.cli.common import DbOption, JsonOption, change, connect, db_path, fail, read
from monitor_tick.cli.tick import emit_json
from monitor_tick.core import clock
from monitor_tick.core.model import InvalidMonitor
from monitor_tick.core.redact import redact_channel_url, redact_url

OFFLINE_RULE = (
    "every failed check counts, even when all of them failed to reach their host (dns, connect "
    "error); name a canary to tell this host's own lost network from a real outage"
)

notify_app = typer.Typer(
    help=(
        "Notification channels: Apprise URLs (ntfy://, slack://, discord://, tgram://, mailto://, "
        "json://, ... see https://github.com/caronc/apprise/wiki) told when incidents are "
        "confirmed and resolved."
    ),
    no_args_is_help=True,
)


@notify_app.command("add")
def notify_add(
    ctx: typer.Context,
    url: Annotated[str, typer.Argument(help="An Apprise URL, e.g. ntfys://ntfy.sh/my-topic or json://host/hook.")],
    monitor: Annotated[str | None, typer.Option(help="Only this monitor (id or name).")] = None,
    owner: Annotated[str | None, typer.Option(help="Only this owner's monitors.")] = None,
    db: DbOption = None,
) -> None:
    """Add a channel and print its id. Without --monitor or --owner it hears of every monitor."""
    if monitor is not None and owner is not None:
        fail("give at most one of --monitor or --owner", 2)
    if not notify.is_valid_url(url):
        fail(f"not an Apprise URL this installation can use: {redact_channel_url(url)}", 2)
    now_ms = clock.now_ms()
    channel = change(
        ctx,
        db,
        lambda conn: store.add_channel(conn, url, monitor_ref=monitor, owner_name=owner, created_at_ms=now_ms),
        create=monitor is None and owner is None,
    )
    typer.echo(str(channel))


@notify_app.command("list")
def notify_list(ctx: typer.Context, db: DbOption = None, as_json: JsonOption = False) -> None:
    """List channels (URLs redacted), what they cover, and their deliveries: pending, sent, given up."""
    rows, canary = read(
        db_path(ctx, db), lambda conn: (store.list_channels(conn), store.get_setting(conn, store.CANARY_SETTING))
    )
    for row in rows:
        row["url"] = redact_channel_url(row["url"])
        row["covers"] = (
            f"monitor {row['monitor']}" if row["monitor"] else f"owner {row['owner']}" if row["owner"] else "all"
        )
    if as_json:
        emit_json({"channels": rows, "network_canary": redact_url(canary) if canary else None})
        return
    if not rows:
        typer.echo("no channels; add one with: monitor-tick notify add APPRISE_URL")
    else:
        typer.echo(f"{'ID':>4}  {'COVERS':<24} {'PENDING':>7} {'SENT':>5} {'FAILED':>6}  URL")
        for r in rows:
            typer.echo(
                f"{r['id']:>4}  {r['covers'][:24]:<24} {r['pending']:>7} {r['sent']:>5} {r['failed']:>6}  {r['url']}"
            )
    if canary:
        typer.echo(f"network canary: {redact_url(canary)}")


@notify_app.command("remove")
def notify_remove(
    ctx: typer.Context,
    channel: Annotated[int, typer.Argument(help="Channel id (see `notify list`).")],
    db: DbOption = None,
) -> None:
    """Remove a channel; its undelivered notifications are dropped."""
    change(ctx, db, lambda conn: store.remove_channel(conn, channel))


@notify_app.command("test")
def notify_test(
    ctx: typer.Context,
    channel: Annotated[int | None, typer.Argument(help="Channel id. Default: every channel.")] = None,
    timeout: Annotated[
        float, typer.Option(min=0.1, max=60, help="Seconds to wait for each channel.")
    ] = notify.SEND_TIMEOUT_S,
    db: DbOption = None,
) -> None:
    """Send a test message now and say, per channel, whether it was delivered (exit 1 if not)."""
    channels = change(ctx, db, lambda conn: store.channel_urls(conn, channel))
    if not channels:
        fail("no channels; add one with: monitor-tick notify add APPRISE_URL")
    results = notify.send_now(channels, policy.trial_message(clock.now_ms()), timeout)
    for channel_id, url in channels:
        error = results[channel_id]
        typer.echo(
            f"{channel_id:>4}  {redact_channel_url(url)}  {'delivered' if error is None else 'FAILED: ' + error}"
        )
    if any(error is not None for error in results.values()):
        raise typer.Exit(1)


@notify_app.command("canary")
def notify_canary(
    ctx: typer.Context,
    url: Annotated[
        str | None,
        typer.Argument(
            help="An http(s) URL that is up whenever this host's network is (e.g. your router or a big site)."
        ),
    ] = None,
    off: Annotated[
        bool, typer.Option("--off", help="Remove the canary: every failed check counts again, none is set aside.")
    ] = False,
    host: Annotated[
        str | None,
        typer.Option(
            "--host",
            metavar="NAME",
            help="This canary is only for the host whose tick runs with --host-name NAME (several hosts on "
            "one PostgreSQL database each see their own network); it comes before the shared one.",
        ),
    ] = None,
    db: DbOption = None,
) -> None:
    """Name a network canary: when checks fail with dns/connect errors, the tick probes it, and if it
    fails too, the host has lost its network (no incidents, nobody told). Without an argument: show it."""
    if url is not None and off:
        fail("give a URL or --off, not both", 2)
    if url is not None:
        try:
            if deferred.probes().kind_of_url(url) != "http":
                raise InvalidMonitor("the canary must be an http(s):// URL")
        except InvalidMonitor as exc:
            fail(f"canary: {exc}", 2)
    conn = connect(db_path(ctx, db), create=url is not None)
    try:
        if url is None and not off:
            current = store.get_setting(conn, store.canary_setting(host))
            typer.echo(redact_url(current) if current else f"no canary: {OFFLINE_RULE}")
            return
        store.set_setting(conn, store.canary_setting(host), None if off else url)
    finally:
        conn.close()
