"""Plans, owners and maintenance windows: `plan add/list/edit/remove`, `owner add/list/edit/remove`,
`maintenance add/list/remove`. Changes apply from the next tick: floors and windows are read
live by the due query, stored intervals are never rewritten."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

import typer

from monitor_tick import store
from monitor_tick.cli.common import (
    DbOption,
    JsonOption,
    change,
    checked_name,
    db_path,
    duration_s,
    fail,
    instant_ms,
    read,
    shown_name,
)
from monitor_tick.cli.tick import emit_json
from monitor_tick.core import clock, schedule
from monitor_tick.core.model import MAX_INTERVAL_SEC

plan_app = typer.Typer(help="Plans: the shortest interval their owners' monitors run at.", no_args_is_help=True)
owner_app = typer.Typer(help="Owners: who monitors belong to, and on which plan.", no_args_is_help=True)
maintenance_app = typer.Typer(help="Maintenance windows: times when monitors are not probed.", no_args_is_help=True)

PlanName = Annotated[str, typer.Argument(help="Plan name ('default': monitors without an owner, expired plans).")]
OwnerName = Annotated[str, typer.Argument(help="Owner name.")]


def _floor_s(text: str) -> int:
    floor_s = duration_s(text, "--min-interval")
    if floor_s < 60 or floor_s % 60:
        fail(f"--min-interval must be whole minutes, at least 1m (got {text})", 2)
    if floor_s > MAX_INTERVAL_SEC:
        fail(f"--min-interval must be at most {clock.format_duration_s(MAX_INTERVAL_SEC)} (got {text})", 2)
    return int(floor_s)


def _table_rows(
    ctx: typer.Context, db: str | None, as_json: bool, reader: Callable[[store.Connection], list[dict[str, Any]]]
) -> list[dict[str, Any]] | None:
    """The rows `reader` reads from the database opened read-only, or None once printed as JSON."""
    rows = read(db_path(ctx, db), reader)
    if as_json:
        emit_json(rows)
        return None
    return rows


def _expiry(ms: int | None) -> str:
    return "never" if ms is None else clock.iso_from_ms(ms)


# ---------------------------------------------------------------------------------------------
# Plans


@plan_app.command("add")
def plan_add(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help="Plan name.")],
    min_interval: Annotated[str, typer.Option(help="The shortest interval for this plan's monitors, e.g. 5m.")],
    db: DbOption = None,
) -> None:
    """Add a plan. Example: monitor-tick plan add free --min-interval 5m"""
    floor_s = _floor_s(min_interval)
    checked_name(name, "plan name")
    change(ctx, db, lambda conn: store.add_plan(conn, name, floor_s), create=True)


@plan_app.command("list")
def plan_list(ctx: typer.Context, db: DbOption = None, as_json: JsonOption = False) -> None:
    """List plans: their floor and how many owners are on each (plan 1 is the default)."""
    rows = _table_rows(ctx, db, as_json, store.list_plans)
    if rows is None:
        return
    typer.echo(f"{'ID':>4}  {'NAME':<20} {'FLOOR':>6}  OWNERS")
    for row in rows:
        default = "  (default)" if row["is_default"] else ""
        typer.echo(
            f"{row['id']:>4}  {shown_name(row['name']):<20} "
            f"{clock.format_duration_s(row['min_interval_sec']):>6}  {row['owners']}{default}"
        )


@plan_app.command("edit")
def plan_edit(
    ctx: typer.Context,
    name: PlanName,
    min_interval: Annotated[str, typer.Option(help="The new shortest interval, e.g. 1m.")],
    db: DbOption = None,
) -> None:
    """Change a plan's floor, the default plan's too. Example: monitor-tick plan edit default --min-interval 5m"""
    floor_s = _floor_s(min_interval)
    old = change(ctx, db, lambda conn: store.edit_plan(conn, name, min_interval_sec=floor_s))
    typer.echo(
        f"plan {shown_name(name)}: floor {clock.format_duration_s(old)} -> {clock.format_duration_s(floor_s)}"
        if old != floor_s
        else f"plan {shown_name(name)}: unchanged"
    )


@plan_app.command("remove")
def plan_remove(ctx: typer.Context, name: PlanName, db: DbOption = None) -> None:
    """Delete a plan that no owner is on (the default plan stays)."""
    removed = change(ctx, db, lambda conn: store.remove_plan(conn, name))
    typer.echo(f"removed plan {removed} ({shown_name(name)})")


# ---------------------------------------------------------------------------------------------
# Owners


@owner_app.command("add")
def owner_add(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help="Owner name.")],
    plan: Annotated[str, typer.Option(help="Plan name (see `plan add`).")] = "default",
    expires: Annotated[
        str | None,
        typer.Option(
            help="When the plan ends (ISO-8601, UTC unless an offset is given); the default plan applies after."
        ),
    ] = None,
    db: DbOption = None,
) -> None:
    """Add an owner. Example: monitor-tick owner add alice --plan pro --expires 2027-01-01"""
    expires_ms = instant_ms(expires, "--expires") if expires else None
    checked_name(name, "owner name")
    if plan != "default" and store.is_missing(db_path(ctx, db)):  # a new database has no other plan
        fail(f"no plan named {plan!r}")
    change(ctx, db, lambda conn: store.add_owner(conn, name, plan, expires_ms), create=True)


@owner_app.command("list")
def owner_list(ctx: typer.Context, db: DbOption = None, as_json: JsonOption = False) -> None:
    """List owners: their plan, its floor, when it expires, and how many monitors they own."""
    rows = _table_rows(ctx, db, as_json, store.list_owners)
    if rows is None:
        return
    typer.echo(f"{'ID':>4}  {'NAME':<20} {'PLAN':<12} {'FLOOR':>6}  {'EXPIRES':<20}  MONITORS")
    for row in rows:
        floor = "?" if row["min_interval_sec"] is None else clock.format_duration_s(row["min_interval_sec"])
        typer.echo(
            f"{row['id']:>4}  {shown_name(row['name']):<20} {shown_name(row['plan'] or '?'):<12} {floor:>6}  "
            f"{_expiry(row['plan_expires_at_ms']):<20}  {row['monitors']}"
        )


@owner_app.command("edit")
def owner_edit(
    ctx: typer.Context,
    name: OwnerName,
    plan: Annotated[str | None, typer.Option(help="Move the owner to this plan.")] = None,
    expires: Annotated[
        str | None,
        typer.Option(help="When the plan ends (ISO-8601), or 'never'; after it the default plan's floor applies."),
    ] = None,
    db: DbOption = None,
) -> None:
    """Change an owner's plan or its expiry. Example: monitor-tick owner edit alice --plan pro --expires 2027-06-01"""
    if plan is None and expires is None:
        fail("nothing to change: give --plan and/or --expires", 2)
    never = expires is not None and expires.strip().lower() == "never"
    expires_ms = instant_ms(expires, "--expires") if expires is not None and not never else None
    before, after = change(
        ctx,
        db,
        lambda conn: store.edit_owner(conn, name, plan_name=plan, expires_at_ms=expires_ms, clear_expiry=never),
    )
    changes = [
        f"{label} {shown(before[key])} -> {shown(after[key])}"
        for label, key, shown in (("plan", "plan", str), ("expires", "plan_expires_at_ms", _expiry))
        if before[key] != after[key]
    ]
    typer.echo(f"owner {shown_name(name)}: {', '.join(changes) or 'unchanged'}")


@owner_app.command("remove")
def owner_remove(ctx: typer.Context, name: OwnerName, db: DbOption = None) -> None:
    """Delete an owner: their monitors stay (without an owner: the default plan applies); their
    maintenance windows and notification channels go."""
    removed = change(ctx, db, lambda conn: store.remove_owner(conn, name))
    typer.echo(
        f"removed owner {removed['id']} ({shown_name(name)}); {removed['monitors']} monitors now without an owner, "
        f"{removed['windows']} maintenance windows and {removed['channels']} channels removed"
    )


# ---------------------------------------------------------------------------------------------
# Maintenance windows


@maintenance_app.command("add")
def maintenance_add(
    ctx: typer.Context,
    from_: Annotated[
        str | None, typer.Option("--from", help="Start of a one-off window (ISO-8601, UTC unless an offset is given).")
    ] = None,
    until: Annotated[str | None, typer.Option(help="End of a one-off window, exclusive (ISO-8601).")] = None,
    daily: Annotated[
        str | None, typer.Option(help="A window every day at this UTC time, e.g. 03:00 (with --for).")
    ] = None,
    weekly: Annotated[
        str | None,
        typer.Option(help="A window on these days at this UTC time, e.g. sat,sun@03:00 or tue-thu@05:00 (with --for)."),
    ] = None,
    for_: Annotated[str | None, typer.Option("--for", help="How long a recurring window lasts, 1m to 24h.")] = None,
    monitor: Annotated[str | None, typer.Option(help="Monitor id or name.")] = None,
    owner: Annotated[str | None, typer.Option(help="Owner name: covers all their monitors.")] = None,
    db: DbOption = None,
) -> None:
    """Add a maintenance window for one monitor or all of an owner's monitors, and print its id:
    one-off (--from, --until) or recurring (--daily 03:00 or --weekly sat,sun@03:00, with --for 30m)."""
    if (monitor is None) == (owner is None):
        fail("give exactly one of --monitor or --owner", 2)
    recurring = [given for given in (daily, weekly) if given is not None]
    if len(recurring) > 1 or (recurring and (from_ or until)) or (not recurring and not (from_ and until)):
        fail("give --from and --until, or one of --daily and --weekly (with --for)", 2)
    if recurring:
        start_minute, days_mask = _repeats(daily, weekly)
        if for_ is None:
            fail("a recurring window needs --for, e.g. --for 30m", 2)
        length_s = duration_s(for_, "--for")
        if length_s % 60 or not (60 <= length_s <= 86_400):
            fail(f"--for must be whole minutes, 1m to 24h (got {for_})", 2)
        new_id = change(
            ctx,
            db,
            lambda conn: store.add_maintenance_schedule(
                conn,
                monitor_ref=monitor,
                owner_name=owner,
                start_minute=start_minute,
                duration_min=int(length_s // 60),
                days_mask=days_mask,
            ),
        )
        typer.echo(str(new_id))
        return
    if for_ is not None:
        fail("--for is for recurring windows (--daily, --weekly); a one-off window ends at --until", 2)
    assert from_ is not None and until is not None
    starts_ms, ends_ms = instant_ms(from_, "--from"), instant_ms(until, "--until")
    if ends_ms <= starts_ms:
        fail("--until must be after --from", 2)
    new_id = change(
        ctx,
        db,
        lambda conn: store.add_maintenance(
            conn, monitor_ref=monitor, owner_name=owner, starts_at_ms=starts_ms, ends_at_ms=ends_ms
        ),
    )
    typer.echo(str(new_id))


def _repeats(daily: str | None, weekly: str | None) -> tuple[int, int]:
    """(start minute of the UTC day, days mask) of --daily HH:MM or --weekly DAYS@HH:MM."""
    try:
        if daily is not None:
            return schedule.parse_time_of_day(daily), schedule.EVERY_DAY
        return schedule.parse_weekly(weekly or "")
    except ValueError as exc:
        fail(f"{'--daily' if daily is not None else '--weekly'}: {exc}", 2)


def repeats_text(start_minute: int, duration_min: int, days_mask: int) -> str:
    """'daily 03:00 UTC for 30m', 'weekly sat,sun 03:00 UTC for 2h'."""
    kind, when = schedule.describe_repeats(start_minute, days_mask)
    return f"{kind} {when.replace('@', ' ')} UTC for {clock.format_duration_s(duration_min * 60)}"


def _covers(row: dict[str, object]) -> str:
    return f"monitor {shown_name(str(row['monitor']))}" if row["monitor"] is not None else f"owner {row['owner']}"


@maintenance_app.command("list")
def maintenance_list(ctx: typer.Context, db: DbOption = None, as_json: JsonOption = False) -> None:
    """List the maintenance windows that are active now or upcoming, with their ids; recurring
    ones with their current or next occurrence."""
    now_ms = clock.now_ms()
    rows = read(db_path(ctx, db), lambda conn: store.list_maintenance(conn, now_ms))
    for row in rows:
        row["repeats"] = None
        if row["days_mask"] is not None:  # the occurrence that holds now, else the next
            after = clock.minute_of_ms(now_ms) - row["duration_min"]
            starts = schedule.next_scheduled_window(after, row["start_minute"], row["days_mask"])
            row["starts_at_ms"] = clock.minute_start_ms(starts)
            row["ends_at_ms"] = clock.minute_start_ms(starts + row["duration_min"])
            row["repeats"] = repeats_text(row["start_minute"], row["duration_min"], row["days_mask"])
    rows.sort(key=lambda row: (row["starts_at_ms"], row["id"]))
    if as_json:
        emit_json(rows)
        return
    if not rows:
        typer.echo("no active or upcoming maintenance windows")
        return
    typer.echo(f"{'ID':>4}  {'FROM':<20}  {'UNTIL':<20}  {'STATE':<8}  COVERS")
    for row in rows:
        repeats = f"  ({row['repeats']})" if row["repeats"] else ""
        typer.echo(
            f"{row['id']:>4}  {clock.iso_from_ms(row['starts_at_ms']):<20}  "
            f"{clock.iso_from_ms(row['ends_at_ms']):<20}  "
            f"{'active' if row['active'] else 'upcoming':<8}  {_covers(row)}{repeats}"
        )


@maintenance_app.command("remove")
def maintenance_remove(
    ctx: typer.Context,
    window: Annotated[int, typer.Argument(help="Window id (see `maintenance list`).")],
    db: DbOption = None,
) -> None:
    """Delete a maintenance window: its monitors are probed again from the next tick."""
    row = change(ctx, db, lambda conn: store.remove_maintenance(conn, window))
    if "days_mask" in row:
        when = repeats_text(row["start_minute"], row["duration_min"], row["days_mask"])
    else:
        when = f"{clock.iso_from_ms(row['starts_at_ms'])} to {clock.iso_from_ms(row['ends_at_ms'])}"
    typer.echo(f"removed maintenance window {row['id']} ({when}, {_covers(row)})")
