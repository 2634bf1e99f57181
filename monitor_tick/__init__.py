"""monitor-tick: a one-shot uptime monitor that system cron runs every minute."""

__version__ = "0.1.0"

# httpx's __init__ imports its own command-line client, httpx._main, which imports click,
# pygments and rich wherever they are installed (typer brings them): about 55 ms of a small
# tick, for a command we never run. None in sys.modules makes that one import fail, and httpx
# then defines a stub `httpx.main` instead (its documented fallback when the CLI's extras are
# missing). Nothing else of httpx changes.
import sys as _sys  # noqa: E402

_sys.modules.setdefault("httpx._main", None)  # type: ignore[arg-type]
