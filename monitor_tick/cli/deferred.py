"""The command line's deferred imports, in one place.

An idle tick (`monitor-tick --db PATH`, 1,440 times a day from cron) imports neither Typer nor
pycurl nor asyncio, and every Typer command line imports all the command modules to register
them; so what only some command lines use is imported here, when one of them needs it:

    probes, guard   the probe kinds (adding a monitor, judging a row's state, --block-private)
    receiver        asyncio (serve)
    tick_outputs,   the status page and metrics writers (--status-page, --metrics-file,
    statuspage,     status-page)
    metrics
    alert_policy    the tick's warnings when its network was lost
    ping            threading and urllib (--ping-url)
    importers       `import`: the importers, Apprise and the probes (PyYAML only for Gatus)

The one other deferred import of the command line is Typer itself, in entry.main.
"""

from __future__ import annotations

from types import ModuleType

TYPE_CHECKING = False  # true for type checkers: the tick never imports typing (core/records.py)
if TYPE_CHECKING:
    from monitor_tick.probes.guard import AddressGuard


def probes() -> ModuleType:
    import monitor_tick.probes

    return monitor_tick.probes


def address_guard() -> AddressGuard:
    from monitor_tick.probes.guard import AddressGuard

    return AddressGuard()


def receiver() -> ModuleType:
    import monitor_tick.receiver

    return monitor_tick.receiver


def statuspage() -> ModuleType:
    from monitor_tick.publish import statuspage

    return statuspage


def metrics() -> ModuleType:
    from monitor_tick.publish import metrics

    return metrics


def tick_outputs() -> ModuleType:
    from monitor_tick.publish import tick_outputs

    return tick_outputs


def alert_policy() -> ModuleType:
    from monitor_tick.alerts import policy

    return policy


def ping() -> ModuleType:
    from monitor_tick.publish import ping

    return ping


def importers() -> ModuleType:
    import monitor_tick.importers.apply
    import monitor_tick.importers.gatus
    import monitor_tick.importers.kuma
    import monitor_tick.importers.plan

    return monitor_tick.importers
