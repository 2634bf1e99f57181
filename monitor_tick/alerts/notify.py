"""Send notifications through Apprise, after the tick's results are committed.

    has_delivery_work?    one indexed read, by the tick before it imports this module: an idle
                          tick stops there (Apprise is never imported)
    deliver_pending(conn, now_ms)
      add_due_reminders   reminder events for incidents that stay open
      claim_deliveries    conditional UPDATE: this run's token on due rows (never two runs)
      compose             per channel, oldest first; a storm of one kind -> one summary
      send                one thread per channel, one message at a time, each under a deadline
      finish_deliveries   sent / retry later with backoff / given up (one warning) / released
      (again)             while all went out and the budget lasts: what came in meanwhile

A channel whose send fails or hangs is left for this run after that message (its later
messages are released untried, so a channel hears of its events in order). A hung send is
abandoned at its deadline (its daemon thread may finish later; the message counts as failed
and is retried, so a channel that answers very late may get it twice: never lost wins).
"""

from __future__ import annotations

import contextvars
import logging
import secrets
import threading
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from monitor_tick import store
from monitor_tick.alerts import policy
from monitor_tick.core import clock
from monitor_tick.core.redact import redact_channel_url, scrub

SEND_TIMEOUT_S = 10.0  # one message to one channel
DELIVERY_BUDGET_S = 20.0  # all of a tick's sending
CLAIM_FOR_MS = 5 * clock.MS_PER_MINUTE  # a claim outlives any run's sending by far
MAX_CLAIMS = 500
TIMED_OUT = "no answer within the deadline"

APP_ID = "monitor-tick"
APP_URL = "https://pypi.org/project/monitor-tick/"


@dataclass
class DeliveryReport:
    sent: int = 0  # messages delivered
    failed: int = 0  # messages that failed (tried again later, or given up)
    warnings: list[str] = field(default_factory=list)  # one line per delivery given up


# ---------------------------------------------------------------------------------------------
# The delivery run


def deliver_pending(
    conn: Any,
    now_ms: int,
    *,
    send_timeout_s: float = SEND_TIMEOUT_S,
    budget_s: float = DELIVERY_BUDGET_S,
) -> DeliveryReport:
    """Send what is due at `now_ms` and record the outcomes; called when store.has_delivery_work
    says there is work (the tick asks it once, before importing this module). Raises
    store.DatabaseError; a channel's failure is an outcome, never an exception."""
    report = DeliveryReport()
    store.add_due_reminders(conn, now_ms)
    # Claims again once all it claimed went out: an event another host decided while this run
    # held its channel could not be claimed there (a channel hears of its events in order), so it
    # goes out here, in its own minute. A failure, or a message left unsent, ends the sending.
    deadline = time.monotonic() + budget_s
    while (left_s := deadline - time.monotonic()) > 0:
        if not _deliver_claimed(conn, now_ms, report, send_timeout_s=min(send_timeout_s, left_s), budget_s=left_s):
            break
    return report


def _deliver_claimed(conn: Any, now_ms: int, report: DeliveryReport, *, send_timeout_s: float, budget_s: float) -> bool:
    """Claim what is due, send it and record the outcomes in `report`. Whether anything was
    claimed and all of it went out (then more may have come meanwhile)."""
    token = secrets.token_hex(8)
    rows = store.claim_deliveries(conn, now_ms, token, now_ms + CLAIM_FOR_MS, MAX_CLAIMS)
    if not rows:
        return False
    by_channel: dict[int, tuple[str, list[policy.EventInfo]]] = {}
    for row in rows:
        by_channel.setdefault(row["channel_id"], (row["channel_url"], []))[1].append(_event(row))
    plans = {channel: (url, policy.compose(events)) for channel, (url, events) in by_channel.items()}
    results = send_all(plans, send_timeout_s=send_timeout_s, budget_s=budget_s)

    row_of = {(row["channel_id"], row["event_id"]): row for row in rows}
    outcomes: list[store.DeliveryOutcome] = []
    for channel, (url, messages) in plans.items():
        for msg in messages:
            error = results.get((channel, msg.event_ids[0]), _RELEASED)
            covered = [row_of[(channel, event_id)] for event_id in msg.event_ids]
            if error is _RELEASED:
                outcomes += [store.DeliveryOutcome(r["event_id"], channel, "released") for r in covered]
                continue
            if error is None:
                report.sent += 1
                outcomes += [store.DeliveryOutcome(r["event_id"], channel, "sent") for r in covered]
                continue
            report.failed += 1
            attempts = 1 + max(r["attempts"] for r in covered)
            if any(policy.gives_up(r["created_at_ms"], now_ms) for r in covered):
                outcomes += [store.DeliveryOutcome(r["event_id"], channel, "failed", error) for r in covered]
                report.warnings.append(
                    f"gave up notifying {redact_channel_url(url)} of {msg.title!r} after {attempts} attempts: {error}"
                )
            else:
                retry_at_ms = policy.retry_at_ms(attempts, now_ms)
                outcomes += [
                    store.DeliveryOutcome(r["event_id"], channel, "retry", error, retry_at_ms) for r in covered
                ]
    store.finish_deliveries(conn, token, now_ms, outcomes)
    return all(outcome.outcome == "sent" for outcome in outcomes)


def _event(row: dict[str, Any]) -> policy.EventInfo:
    return policy.EventInfo(
        event_id=row["event_id"],
        kind=row["kind"],
        created_at_ms=row["created_at_ms"],
        monitor_name=row["monitor_name"],
        monitor_url=row["monitor_url"],
        cause=row["cause"],
        http_status=row["http_status"],
        started_at_ms=row["started_at_ms"],
        resolved_at_ms=row["resolved_at_ms"],
    )


_RELEASED: Any = object()  # not attempted in this run


def send_all(
    plans: dict[int, tuple[str, list[policy.Message]]], *, send_timeout_s: float, budget_s: float
) -> dict[tuple[int, int], str | None]:
    """Send each channel's messages in order, channels side by side. Returns (channel, event
    id) -> None (delivered) or an error, for every event of every message attempted; events
    missing were not attempted. Returns within about `budget_s`, and a send gets at most
    `send_timeout_s`: what is still hanging then has failed."""
    load_apprise()  # here, before any thread: importing it touches process-wide warning filters
    lock = threading.Lock()
    closed = threading.Event()
    results: dict[tuple[int, int], str | None] = {}
    in_flight: dict[int, policy.Message] = {}

    def record(channel: int, msg: policy.Message, error: str | None) -> None:
        for event_id in msg.event_ids:
            results[(channel, event_id)] = error

    def run_channel(channel: int, url: str, messages: list[policy.Message]) -> None:
        for msg in messages:
            with lock:
                if closed.is_set():
                    return
                in_flight[channel] = msg
            outcome: list[str | None] = []
            sender = threading.Thread(target=_send_into, args=(outcome, url, msg), daemon=True)
            sender.start()
            sender.join(send_timeout_s)
            with lock:
                if closed.is_set():
                    return
                del in_flight[channel]
                error = outcome[0] if outcome else TIMED_OUT
                record(channel, msg, error)
                if error is not None:
                    return  # its later messages wait, in order, for a later run

    workers = [
        threading.Thread(target=run_channel, args=(channel, url, messages), daemon=True)
        for channel, (url, messages) in plans.items()
    ]
    for worker in workers:
        worker.start()
    # Bounded by the budget on a real clock; were the clock frozen (tests), each channel still
    # ends after its messages' deadlines.
    deadline = time.monotonic() + budget_s
    for worker in workers:
        worker.join(max(0.0, deadline - time.monotonic()))
    with lock:
        closed.set()
        for channel, msg in in_flight.items():
            record(channel, msg, TIMED_OUT)
        return dict(results)


def _send_into(outcome: list[str | None], url: str, message: policy.Message) -> None:
    outcome.append(send(url, message))


# ---------------------------------------------------------------------------------------------
# One message to one channel, through Apprise


def send(url: str, message: policy.Message) -> str | None:
    """Send one message to one Apprise URL. Returns None when the service accepted it, else a
    short error (channel secrets removed). Never raises."""
    try:
        apprise = load_apprise()
        errors: list[str] = []
        token = _collector.set(errors.append)
        try:
            sender = apprise.Apprise(asset=apprise.AppriseAsset(app_id=APP_ID, app_desc=APP_ID, app_url=APP_URL))
            if not sender.add(url):
                return "not a usable Apprise URL"
            delivered = sender.notify(
                body=message.body,
                title=message.title,
                notify_type=apprise.NotifyType(message.notify_type),
                body_format=apprise.NotifyFormat.TEXT,
            )
        finally:
            _collector.reset(token)
    except Exception as exc:  # a bug or a broken plugin is this channel's failure, not the tick's
        return scrub(f"{type(exc).__name__}: {exc}", url)
    if delivered:
        return None
    return scrub(errors[-1] if errors else "not delivered", url)


# Apprise logs why a send failed; each send collects its own records (Apprise copies the
# context into its worker threads) and nothing reaches stderr.
_collector: contextvars.ContextVar[Callable[[str], None] | None] = contextvars.ContextVar(
    "monitor_tick_apprise_errors", default=None
)
_loaded: Any = None
_load_lock = threading.Lock()


class _Collect(logging.Handler):
    def emit(self, record: logging.LogRecord) -> None:
        collect = _collector.get()
        if collect is not None:
            collect(record.getMessage())


def load_apprise() -> Any:
    """Import Apprise (only when there is something to send) and keep its logs to ourselves."""
    global _loaded
    with _load_lock:
        if _loaded is None:
            with warnings.catch_warnings():
                # Apprise's e-mail plugin imports the deprecated imghdr module on Python 3.11/3.12
                warnings.filterwarnings("ignore", category=DeprecationWarning)
                import apprise

                apprise.Apprise().add("json://localhost")  # loads the plugins while warnings are off
            log = logging.getLogger("apprise")
            log.addHandler(_Collect(logging.WARNING))
            log.propagate = False
            _loaded = apprise
        return _loaded


def is_valid_url(url: str) -> bool:
    """Whether Apprise can use `url` (no message is sent)."""
    apprise = load_apprise()
    return bool(apprise.Apprise().add(url))


def send_now(
    channels: Sequence[tuple[int, str]], message: policy.Message, send_timeout_s: float
) -> dict[int, str | None]:
    """Send one message to each channel now, under the same deadlines: channel id -> None
    (delivered) or an error."""
    tagged = policy.Message(message.title, message.body, message.notify_type, (0,))
    results = send_all(
        {channel: (url, [tagged]) for channel, url in channels}, send_timeout_s=send_timeout_s, budget_s=send_timeout_s
    )
    return {channel: results.get((channel, 0), TIMED_OUT) for channel, _ in channels}
