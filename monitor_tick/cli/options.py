"""The tick's options, declared once.

Cron starts `monitor-tick` 1,440 times a day, and importing Typer (with its click) costs about
three times what a whole idle tick does. So the tick's options are one table, TICK_OPTIONS, from
which two parsers are made: `parse_tick_args` here, with the standard library, for the console
entry point's fast path; and the Typer root callback's parameters (cli/app.py,
`tick_parameters`), which give usage, --help and every usage error. The fast path takes a
command line only when it reads it exactly as Typer would, and hands anything else to Typer.
Nothing here imports pycurl, asyncio or Typer.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from monitor_tick import store
from monitor_tick.core import clock
from monitor_tick.core.records import NamedTuple
from monitor_tick.run.rounds import (
    DEFAULT_BUDGET_S,
    DEFAULT_CATCH_UP_MINUTES,
    DEFAULT_CONCURRENCY,
    DEFAULT_LEASE_S,
    DEFAULT_RETRY_DELAY_S,
    IN_FLIGHT_PER_WORKER,
    MAX_BUDGET_S,
    SLOT_HOLD_SHARE,
)

TYPE_CHECKING = False  # true for type checkers: the tick never imports typing (core/records.py)
if TYPE_CHECKING:
    from typing import Any

DEFAULT_DB = "monitor-tick.db"
DB_ENVVAR = "MONITOR_TICK_DB"
BLOCK_PRIVATE_ENVVAR = "MONITOR_TICK_BLOCK_PRIVATE"
PING_URL_ENVVAR = "MONITOR_TICK_PING_URL"
LOCATION_ENVVAR = "MONITOR_TICK_LOCATION"
STATUS_TITLE_ENVVAR = "MONITOR_TICK_STATUS_TITLE"  # status-page --title, and the tick's --status-page
DB_HELP = (
    f"SQLite database file (created on first use), or a postgresql://user@host:port/dbname URL "
    f"(pip install 'monitor-tick[postgres]'). Default: ./{DEFAULT_DB}"
)


class TickOption(NamedTuple):
    """One option of the tick. `kind`: bool (a flag), int or str; `optional`: None is its
    default and a value may be given. `low`/`high` bound an int; `envvar` is read when the
    option is not given."""

    name: str  # run_tick_command's keyword
    flags: tuple[str, ...]
    kind: type
    default: Any
    help: str
    optional: bool = False
    low: int | None = None
    high: int | None = None
    envvar: str | None = None
    metavar: str | None = None


TICK_OPTIONS: tuple[TickOption, ...] = (
    TickOption("db", ("--db",), str, None, DB_HELP, optional=True, envvar=DB_ENVVAR),
    TickOption(
        "minute",
        ("--minute",),
        int,
        None,
        "Run as if the clock read this minute of the epoch (epoch seconds // 60), "
        "to replay or debug it. Never catches up, and records nothing for monitors added "
        "after it. A minute that has not come yet is refused, except with --dry-run.",
        optional=True,
        low=0,
        high=clock.LAST_MINUTE,
    ),
    TickOption("dry_run", ("--dry-run",), bool, False, "List what is due; probe and write nothing."),
    TickOption(
        "as_json",
        ("--json",),
        bool,
        False,
        "Print JSON instead of text: up/down/unknown count the checks recorded, results every check made.",
    ),
    TickOption(
        "concurrency",
        ("--concurrency",),
        int,
        DEFAULT_CONCURRENCY,
        "Probes started at once: each of this many workers starts the next probe when its last "
        f"one ended or has run {SLOT_HOLD_SHARE * DEFAULT_BUDGET_S:g}s (a hanging host runs on to its "
        f"own timeout). At most {IN_FLIGHT_PER_WORKER}x this many probes are in flight.",
        low=1,
        high=1000,
    ),
    TickOption(
        "force",
        ("--force",),
        bool,
        False,
        "Run even if this minute was already run: probe and report what is due, but record only "
        "what its run did not (monitors it cut off or added since), never a check twice. "
        "--json's up/down/unknown count what is recorded; its results list every check.",
    ),
    TickOption(
        "retry_delay",
        ("--retry-delay",),
        str,
        f"{DEFAULT_RETRY_DELAY_S:g}s",
        "Pause before a failed probe is tried again within the tick (0 for none).",
    ),
    TickOption(
        "catch_up",
        ("--catch-up",),
        int,
        DEFAULT_CATCH_UP_MINUTES,
        "Also probe for up to this many unclaimed minutes before this one (cron skipped them); "
        "older gaps are recorded as missed. 0 turns catch-up off.",
        low=0,
        high=1440,
    ),
    TickOption(
        "budget",
        ("--budget",),
        str,
        f"{DEFAULT_BUDGET_S:g}s",
        f"Stop probing after this long (at most {MAX_BUDGET_S:g}s); unfinished probes count as "
        "unknown, not down. A monitor whose --timeout is not below it could never end as a "
        "timeout: a configuration error, said once an hour.",
    ),
    TickOption(
        "block_private",
        ("--block-private",),
        bool,
        False,
        "Refuse probes to loopback, private, link-local and cloud-metadata addresses "
        "(checked on the resolved address, redirects included). For shared installations.",
        envvar=BLOCK_PRIVATE_ENVVAR,
    ),
    TickOption(
        "busy_timeout",
        ("--busy-timeout",),
        str,
        f"{store.DEFAULT_BUSY_TIMEOUT_S:g}s",
        "How long to wait for another process's write lock before failing.",
    ),
    TickOption(
        "ping_url",
        ("--ping-url",),
        str,
        None,
        "After the tick, GET this URL (healthchecks.io style), or URL/fail when the tick "
        "failed, so that someone notices when ticks stop. At most a few seconds; a failed ping "
        "is one line on stderr and does not change the exit code.",
        optional=True,
        envvar=PING_URL_ENVVAR,
        metavar="URL",
    ),
    TickOption(
        "host_name",
        ("--host-name",),
        str,
        None,
        "This host's name in the claims of a shared PostgreSQL database (`monitor-tick hosts`). "
        "Default: the machine's hostname.",
        optional=True,
        metavar="NAME",
    ),
    TickOption(
        "location",
        ("--location",),
        str,
        None,
        "The place this host probes from (1-32 characters of a-z, 0-9 and '-'; default: "
        "'default'). On a shared PostgreSQL database a monitor with --locations is checked once "
        "a due minute in each of them, by that location's hosts only; checks from a named "
        "location send User-Agent: monitor-tick/VERSION (location NAME). `monitor-tick locations` "
        "lists them.",
        optional=True,
        envvar=LOCATION_ENVVAR,
        metavar="NAME",
    ),
    TickOption(
        "lease",
        ("--lease",),
        str,
        f"{DEFAULT_LEASE_S:g}s",
        "PostgreSQL: a claimed share of the minute not finished within this may be taken over "
        "by another host. Must exceed --budget plus the hosts' clock skew.",
    ),
    TickOption("verbose", ("-v", "--verbose"), bool, False, "Say on stderr what the tick did."),
    TickOption(
        "status_page",
        ("--status-page",),
        str,
        None,
        "After the tick, rewrite the status page and badges in DIR.",
        optional=True,
        metavar="DIR",
    ),
    TickOption(
        "metrics_file",
        ("--metrics-file",),
        str,
        None,
        "After the tick, write Prometheus metrics (textfile format).",
        optional=True,
        metavar="PATH",
    ),
)

_BY_FLAG = {flag: option for option in TICK_OPTIONS for flag in option.flags}


def parse_tick_args(args: Sequence[str], environ: Mapping[str, str]) -> dict[str, Any] | None:
    """The tick's options from a command line, as run_tick_command's keyword arguments; None
    when the command line is anything but the tick's options with valid values (Typer's turn)."""
    if any(name.startswith("_") and name.endswith("_COMPLETE") for name in environ):
        return None  # shell completion is Typer's
    values: dict[str, Any] = {option.name: option.default for option in TICK_OPTIONS}
    given: set[str] = set()
    pending = list(args)
    while pending:
        arg = pending.pop(0)
        name, equals, inline = arg.partition("=") if arg.startswith("--") else (arg, "", "")
        option = _BY_FLAG.get(name)
        if option is None:
            return None  # --help, a subcommand, an unknown option, "--", "-vv", ...
        if option.kind is bool:
            if equals:
                return None
            values[option.name] = True
        else:
            if equals:
                text = inline
            elif pending and not pending[0].startswith("-"):
                text = pending.pop(0)
            else:
                return None  # a missing value, or one that looks like an option
            value = _value(option, text)
            if value is None:
                return None
            values[option.name] = value
        given.add(option.name)
    for option in TICK_OPTIONS:
        if option.envvar is None or option.name in given or option.envvar not in environ:
            continue
        if option.kind is not str:
            return None  # Typer reads boolean and number environment variables its own way
        values[option.name] = environ[option.envvar] or None
    return values


def _value(option: TickOption, text: str) -> Any:
    """An option's value as Typer would take it; None when Typer would refuse it."""
    if option.kind is not int:
        return text
    try:
        number = int(text)
    except ValueError:
        return None
    if (option.low is not None and number < option.low) or (option.high is not None and number > option.high):
        return None
    return number
