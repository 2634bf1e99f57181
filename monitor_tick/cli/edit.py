"""`edit NAME|ID`: change a monitor in place. Its id stays, and with it its rollups, incidents,
badge URL and metrics series.

`edit` takes every option of `add` (cli/monitors.py), read from add's own signature: an option
added to `add` is an option of `edit` with no change here. Each defaults to "unchanged"; a flag
(`--aligned`) gets its opposite (`--not-aligned`)."""

from __future__ import annotations

import copy
import inspect
import re
import typing
from typing import Annotated, Any

import typer

from monitor_tick import store
from monitor_tick.cli import deferred, places
from monitor_tick.cli.common import (
    ALERT_FLAGS,
    DbOption,
    change_text,
    connect,
    db_path,
    duration_or_zero_s,
    fail,
    shown_name,
    warn_unset_references,
)
from monitor_tick.cli.monitors import add, given_options, interval_s, option_of
from monitor_tick.core import clock
from monitor_tick.core.model import OPTION_FLAGS, OPTIONS, AlertSettings, InvalidMonitor, check_alert_settings
from monitor_tick.core.quorum import PLACE_COLUMNS, PLACE_FLAGS

app = typer.Typer()  # merged into the root app (cli/app.py)

# how add's help states a default Typer cannot show (None stands for it)
_DEFAULT_NOTE = re.compile(r"\s*\[default: [^\]]*\]$")
# add's parameters that are not settings of the monitor itself
_NOT_EDITED = {"ctx", "url", "db"}
# the columns edit compares, with the option that sets each, for "what changed"
_FLAGS = {
    "name": "--name",
    "url": "--url",
    "interval_sec": "--every",
    "aligned": "--aligned",
    "private": "--private",
    "group_name": "--group",
    **OPTION_FLAGS,
}


def edit(ctx: typer.Context, monitor: str, url: str | None = None, db: str | None = None, **parameters: Any) -> None:
    """Change a monitor's settings (any option of `add`), keeping its id and history; says what
    changed. An option not given is left as it is. A text option given as '' goes back to its
    default (`--keyword ''`: no keyword check, `--header ''`: no headers), and so does a flag's
    --not- form (`--not-insecure`). Example: monitor-tick edit api --every 1m --keyword ok"""
    probes = deferred.probes()
    conn = connect(db_path(ctx, db))
    try:
        try:
            row = store.monitor_row(conn, monitor)
        except store.StoreError as exc:
            fail(str(exc))
        new_url = row["url"] if url is None else url
        try:
            kind = probes.PROBES[probes.kind_of_url(new_url)]
        except InvalidMonitor as exc:
            fail(f"--url: {exc}", 2)
        if kind.pinged != probes.PROBES[row["kind"]].pinged:
            fail("a heartbeat cannot become a probed monitor or the other way; add a new monitor", 2)
        # '' (a --header '' too) and an option's --not- flag put it back to its default
        blank = {name for name, value in parameters.items() if value in ("", [""]) or value is False}
        given = given_options({name: value for name, value in parameters.items() if name not in blank})
        cleared = {option_of(name) for name in blank} - {None}
        # the stored options stay, except those the (new) kind does not have, those at the old
        # kind's default (a changed kind brings its own) and those given as '' (back to default)
        old_kind = probes.PROBES[row["kind"]]
        kept = {
            option: row[option]
            for option in OPTIONS
            if option in kind.options and option not in cleared and row[option] != probes.default_of(old_kind, option)
        }
        every = parameters.get("every")
        aligned = parameters.get("aligned")
        private = parameters.get("private")
        group = parameters.get("group")
        # held to what anyone types: what is given here, not a value stored before the bounds
        typed = {*given, *(["name"] if parameters.get("name") else []), *(["group_name"] if group else [])}
        try:
            new = probes.new_monitor(
                name=parameters.get("name") or row["name"],
                url=new_url,
                interval_sec=row["interval_sec"] if every is None else interval_s(every),
                aligned=bool(row["aligned"]) if aligned is None else aligned,
                given={**kept, **given},
                typed=typed,
                private=bool(row["private"]) if private is None else private,
                group_name=row["group_name"] if group is None else (group or None),
            )
            remind = parameters.get("remind")
            remind_s = duration_or_zero_s(remind, "--remind") if remind is not None else None
            alerts = check_alert_settings(
                AlertSettings(
                    row["alert_after_checks"] if parameters.get("alert_after") is None else parameters["alert_after"],
                    row["resolve_after_checks"]
                    if parameters.get("resolve_after") is None
                    else parameters["resolve_after"],
                    row["remind_every_sec"] if remind_s is None else (round(remind_s) or None),
                )
            )
        except InvalidMonitor as exc:
            fail(str(exc), 2)
        refused = probes.fleet_refusal(new, store.fleet_hosts(conn)) if new.url != row["url"] else None
        if refused:  # a monitor kept at its URL stays as it is
            fail(refused)
        values = {column: getattr(new, column) for column in _FLAGS}
        values["kind"] = new.kind
        values["aligned"] = int(new.aligned)
        values["private"] = int(new.private)
        values.update(
            alert_after_checks=alerts.alert_after_checks,
            resolve_after_checks=alerts.resolve_after_checks,
            remind_every_sec=alerts.remind_every_sec,
        )
        given_places = {name: parameters.get(name) for name in PLACE_COLUMNS}
        if given_places["notify_partial"] is False:  # --not-notify-partial
            given_places["notify_partial"] = 0
        values.update(places.place_columns(conn, {c: row[c] for c in PLACE_COLUMNS}, given_places, pinged=kind.pinged))
        changed = {column: value for column, value in values.items() if row[column] != value}
        owner = parameters.get("owner")
        if owner is not None and owner != (row["owner"] or ""):
            changed_owner = True
        else:
            changed_owner, owner = False, None
        try:
            store.update_monitor(conn, str(row["id"]), changed, clock.now_ms(), owner)
        except store.StoreError as exc:
            fail(str(exc))
    finally:
        conn.close()
    flags = {**_FLAGS, **ALERT_FLAGS, **PLACE_FLAGS}
    after = {**row, **values}
    lines = [f"{flags[column]} {change_text(column, row, after)}" for column in changed if column in flags]
    if changed_owner:
        lines.append(f"--owner {row['owner'] or 'none'} -> {owner or 'none'}")
    typer.echo(f"monitor {row['id']} ({shown_name(row['name'])}): {', '.join(lines) or 'unchanged'}")
    warn_unset_references(new.name, new.url, new.headers, new.basic_auth, new.body)


def _edit_parameter(parameter: inspect.Parameter, annotation: Any) -> inspect.Parameter:
    """One of add's parameters as edit's: optional, None meaning unchanged (so without the
    `[default: ...]` add's help ends with)."""
    kind, info = typing.get_args(annotation)[:2]
    info = copy.copy(info)
    info.help = _DEFAULT_NOTE.sub("", info.help or "")
    if kind is bool:  # in Annotated form Typer reads the first declaration from `default`
        flag = parameter.name.replace("_", "-")
        info.default, info.param_decls = f"--{flag}/--not-{flag}", ()
    return parameter.replace(annotation=Annotated[kind | None, info], default=None, kind=inspect.Parameter.KEYWORD_ONLY)


_ADD_HINTS = typing.get_type_hints(add, include_extras=True)
edit.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
    [
        inspect.Parameter("ctx", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=typer.Context),
        inspect.Parameter(
            "monitor",
            inspect.Parameter.POSITIONAL_OR_KEYWORD,
            annotation=Annotated[str, typer.Argument(help="Monitor id or name.")],
        ),
        inspect.Parameter(
            "url",
            inspect.Parameter.KEYWORD_ONLY,
            default=None,
            annotation=Annotated[
                str | None, typer.Option(help="A new URL of the same kind of check (or another probed kind).")
            ],
        ),
        *(
            _edit_parameter(parameter, _ADD_HINTS[name])
            for name, parameter in inspect.signature(add).parameters.items()
            if name not in _NOT_EDITED
        ),
        inspect.Parameter("db", inspect.Parameter.KEYWORD_ONLY, default=None, annotation=DbOption),
    ]
)
edit.__annotations__ = {}  # Typer reads the signature above
app.command()(edit)
