"""What an http monitor sends beyond its URL: headers, basic auth, a body, and how it verifies TLS.

Secrets. Header values, the basic-auth user and password, and the body may be, or hold,
`${ENV_VAR}` references, resolved from the tick's environment when the request is built, never
stored or printed (core/redact.py's redact_settings is what output shows); so may any monitor's
URL (probes.resolved). A reference to a variable that is not set is a configuration error
(`UnresolvedReference`), not the site's outage: the tick skips the monitor and says why, once
an hour. What a probe says (its cause) goes through hide_values, so a value the tick resolved
is never printed or stored.

TLS. --ca-file trusts the certificate authorities in one PEM file instead of the system's (a
home lab's own CA, as curl's --cacert); --insecure verifies nothing. A monitor with either gets
an SSL context, and curl options, of its own (`tls_setting` is its key: the tick builds them per
distinct setting, only when such a monitor is due).
"""

from __future__ import annotations

import base64
import os
import re
from collections.abc import Callable, Mapping

from monitor_tick.core.model import METHODS, InvalidMonitor, Monitor, line_breaker
from monitor_tick.core.redact import ENV_REFERENCE, header_lines

TYPE_CHECKING = False  # true for type checkers: the tick never imports typing (core/records.py)
if TYPE_CHECKING:
    import ssl

    from monitor_tick.core.model import ProbeResult
    from monitor_tick.probes.base import Probe, ProbeContext

USER_AGENT = "monitor-tick (uptime check)"


def location_user_agent(location: str) -> str | None:
    """The User-Agent of checks made from a named location, so that sites (and the tests) can
    tell where a check came from; None for the 'default' location, which keeps USER_AGENT."""
    from monitor_tick import __version__

    return None if location == "default" else f"monitor-tick/{__version__} (location {location})"


def with_user_agent(monitor: Monitor, agent: str | None) -> Monitor:
    """`monitor` sending `agent` as its User-Agent, unless it has its own (--header wins)."""
    if agent is None or monitor.kind not in ("http", "ws"):
        return monitor
    if any(name.lower() == "user-agent" for name, _ in header_lines(monitor.headers)):
        return monitor
    lines = f"{monitor.headers}\nUser-Agent: {agent}" if monitor.headers else f"User-Agent: {agent}"
    return monitor._replace(headers=lines)


# RFC 9110's token: what a header name may be made of (compiled on first use, by re's cache:
# only monitors with --header need it)
_TOKEN = r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$"
# set by curl from the URL and the body: a second copy would make the request ambiguous
_RESERVED = frozenset({"host", "content-length", "transfer-encoding", "connection"})


class UnresolvedReference(InvalidMonitor):
    """A ${ENV_VAR} reference to a variable that is not set (or holds a line break)."""


def resolve(
    text: str,
    env: Mapping[str, str] | None = None,
    carrier: str = "a header",
    encode: Callable[[str], str] = str,
) -> str:
    """`text` with each ${ENV_VAR} replaced by its value (through `encode`). Raises
    UnresolvedReference naming the variable (never its value); `carrier` is what cannot carry a
    line break, for its message."""
    env = os.environ if env is None else env

    def value(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in env:
            raise UnresolvedReference(f"environment variable {name} is not set")
        found = env[name]
        if line_breaker(found):
            raise UnresolvedReference(f"environment variable {name} holds a character {carrier} cannot carry")
        return encode(found)

    return re.sub(ENV_REFERENCE, value, text)


def hide_values(text: str, monitor: Monitor, env: Mapping[str, str] | None = None) -> str:
    """`text` (a probe's cause, an error's message) with the value of each variable the monitor's
    URL, headers, basic auth or body refers to replaced by its reference where it stands whole
    (not inside a longer word): a dns:// check's `expect=${IP}` says 'expected ${IP}, got ...',
    never the address it was given. A URL's host is no secret, and its value is left as it
    is: a host named `redis` must not turn the kind's own 'redis: dns' into '${REDIS_HOST}:
    dns', which the canary could no longer read."""
    env = os.environ if env is None else env
    names: dict[str, str] = {}
    start, userinfo, _, rest = split_authority(monitor.url)  # the host: no secret
    for setting in (start + userinfo + rest, monitor.headers, monitor.basic_auth, monitor.body):
        if setting and "${" in setting:
            for name in re.findall(ENV_REFERENCE, setting):
                if env.get(name):
                    names[env[name]] = name
    for found in sorted(names, key=len, reverse=True):  # a value inside another is hidden with it
        whole = re.compile(r"(?<![A-Za-z0-9])" + re.escape(found) + r"(?![A-Za-z0-9])")
        text = whole.sub(lambda _, name=names[found]: "${" + name + "}", text)
    return text


def split_authority(url: str) -> tuple[str, str, str, str]:
    """`url` as (`scheme://`, the user info with its '@', `host[:port]`, the rest: path, query,
    fragment), each '' where there is none; the four join back to `url`."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        return "", "", "", url
    end = min((i for i in (rest.find(c) for c in "/?#") if i >= 0), default=len(rest))
    userinfo, at, host = rest[:end].rpartition("@")
    return scheme + sep, userinfo + at, host, rest[end:]


def request_headers(monitor: Monitor, env: Mapping[str, str] | None = None) -> dict[str, str]:
    """The headers to send, references resolved (basic auth included as Authorization).
    Raises UnresolvedReference."""
    headers = {name: resolve(value, env) for name, value in header_lines(monitor.headers)}
    if monitor.basic_auth is not None:
        user, _, password = monitor.basic_auth.partition(":")
        pair = f"{resolve(user, env)}:{resolve(password, env)}".encode()
        headers["Authorization"] = "Basic " + base64.b64encode(pair).decode("ascii")
    return headers


def request_body(monitor: Monitor, env: Mapping[str, str] | None = None) -> bytes | None:
    """The body to send (UTF-8), references resolved. Raises UnresolvedReference."""
    return None if monitor.body is None else resolve(monitor.body, env).encode("utf-8")


def unresolved(monitor: Monitor) -> str | None:
    """Why the monitor's references cannot be resolved in this environment, or None."""
    try:
        request_headers(monitor)
        request_body(monitor)
    except UnresolvedReference as exc:
        return str(exc)
    return None


def tls_setting(monitor: Monitor) -> tuple[str | None, bool] | None:
    """(ca_file, insecure) when the monitor verifies TLS its own way; None: the tick's default."""
    if monitor.ca_file is None and not monitor.insecure:
        return None
    return monitor.ca_file, bool(monitor.insecure)


def trust_locations() -> tuple[str | None, str | None]:
    """(SSL_CERT_FILE, SSL_CERT_DIR), as HTTP checks and TLS probes read them. A CA setting that
    names nothing raises FileNotFoundError (a file that is not PEM fails each TLS check
    instead, when it is first needed)."""
    cafile = os.environ.get("SSL_CERT_FILE") or None
    capath = None if cafile else os.environ.get("SSL_CERT_DIR") or None
    if cafile and not os.path.isfile(cafile):
        raise FileNotFoundError(f"SSL_CERT_FILE names no file: {cafile}")
    if capath and not os.path.isdir(capath):
        raise FileNotFoundError(f"SSL_CERT_DIR names no directory: {capath}")
    return cafile, capath


def check_trust(verify: object) -> None:
    """Raise FileNotFoundError when `verify` is the default trust (True) and its CA setting names
    nothing: what making DefaultTrust would raise, without making it."""
    if verify is True:
        trust_locations()


def ssl_context(verify: object = True) -> ssl.SSLContext:
    """The one TLS context of a tick: what HTTPS requests and tls:// probes both trust.
    `verify`: an ssl.SSLContext (used as is), True (the default CA bundle, loaded on the
    first handshake: trust.DefaultTrust), False (no verification) or a CA file. Called when a
    check first needs TLS: ssl is imported then (a tick of plain http:// checks never loads it)."""
    import ssl

    if isinstance(verify, ssl.SSLContext):
        return verify
    if verify is True:
        from monitor_tick.probes.trust import DefaultTrust

        return DefaultTrust(*trust_locations())
    context = ssl.create_default_context(cafile=verify) if isinstance(verify, str) else ssl.create_default_context()
    if verify is False:  # no verification (a test's or embedder's)
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    return context


class Contexts:
    """A tick's SSL contexts by TLS setting (tls_setting; None: the tick's `verify`, as
    ssl_context reads it), each made when a check first needs it (ssl is imported then)."""

    def __init__(self, verify: object) -> None:
        """Checks `verify` now, so that a CA setting that names nothing fails the tick at its start."""
        check_trust(verify)
        self._verify = verify
        self._contexts: dict[tuple[str | None, bool] | None, ssl.SSLContext] = {}
        self._curl: dict[tuple[str | None, bool] | None, dict[int, object]] = {}
        self._proxies: dict[str, str] | None = None

    def context(self, setting: tuple[str | None, bool] | None) -> ssl.SSLContext:
        if setting not in self._contexts:
            self._contexts[setting] = ssl_context(self._verify) if setting is None else ssl_context_for(setting)
        return self._contexts[setting]

    def proxies(self) -> dict[str, str]:
        """The proxies of the environment, as urllib reads them (HTTP_PROXY, HTTPS_PROXY,
        ALL_PROXY and NO_PROXY, in either case), read once a tick: reading them walks the
        whole environment."""
        if self._proxies is None:
            import os

            self._proxies = {}
            # urllib.request costs a tick about 10 ms to import: only when a proxy may be set
            if any(name[-6:].lower() == "_proxy" for name in os.environ):
                import urllib.request

                self._proxies = urllib.request.getproxies_environment()
        return self._proxies

    def curl_trust(self, setting: tuple[str | None, bool] | None) -> dict[int, object]:
        """curl's TLS options for HTTP checks of this setting (curl_trust_options)."""
        if setting not in self._curl:
            self._curl[setting] = curl_trust_options(self._verify, setting)
        return self._curl[setting]


def curl_trust_options(verify: object, setting: tuple[str | None, bool] | None) -> dict[int, object]:
    """curl's TLS options for a monitor's tls_setting (request.tls_setting; None: the tick's
    `verify`: True for SSL_CERT_FILE, else SSL_CERT_DIR, else certifi's bundle; False for none;
    a CA file; or an ssl.SSLContext, whose CA certificates and verify mode are used)."""
    import pycurl

    if setting is not None:
        ca_file, insecure = setting
        verify = False if insecure else ca_file
    if verify is False:
        return {pycurl.SSL_VERIFYPEER: 0, pycurl.SSL_VERIFYHOST: 0}
    if isinstance(verify, str):
        return {pycurl.CAINFO: verify, pycurl.CAPATH: None}
    if verify is True:
        cafile, capath = trust_locations()
        if capath:
            return {pycurl.CAPATH: capath, pycurl.CAINFO: None}
        if not cafile:
            import certifi

            cafile = certifi.where()
        return {pycurl.CAINFO: cafile, pycurl.CAPATH: None}
    import ssl  # an embedder's context: its CA certificates, its verification

    assert isinstance(verify, ssl.SSLContext)
    if verify.verify_mode == ssl.CERT_NONE:
        return {pycurl.SSL_VERIFYPEER: 0, pycurl.SSL_VERIFYHOST: 0}
    pem = "".join(ssl.DER_cert_to_PEM_cert(der) for der in verify.get_ca_certs(binary_form=True))
    options: dict[int, object] = {pycurl.CAINFO_BLOB: pem.encode("ascii"), pycurl.CAPATH: None}
    if not verify.check_hostname:
        options[pycurl.SSL_VERIFYHOST] = 0
    return options


def ssl_context_for(setting: tuple[str | None, bool]) -> ssl.SSLContext:
    """The SSL context of a tls_setting. Raises OSError or ssl.SSLError for an unusable CA file."""
    import ssl

    ca_file, insecure = setting
    context = ssl.create_default_context(cafile=ca_file) if ca_file else ssl.create_default_context()
    if insecure:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    return context


def check(monitor: Monitor) -> None:
    """Headers, basic auth, body, method, CA file and --insecure as stored. Raises InvalidMonitor
    (never quoting a value: it may be a secret)."""
    if monitor.method not in METHODS:
        raise InvalidMonitor(f"method must be one of {', '.join(METHODS)} (got {monitor.method!r})")
    _check_headers(monitor)
    if monitor.basic_auth is not None:
        if not isinstance(monitor.basic_auth, str) or ":" not in monitor.basic_auth:
            raise InvalidMonitor("--basic-auth must be USER:PASSWORD")
        if line_breaker(monitor.basic_auth):
            raise InvalidMonitor("--basic-auth contains a character a header cannot carry")
    if monitor.body is not None:
        if not isinstance(monitor.body, str):
            raise InvalidMonitor("--body must be text")
        if monitor.method in ("GET", "HEAD"):
            raise InvalidMonitor(f"--body needs a method that sends one, e.g. --method POST (not {monitor.method})")
    if monitor.insecure not in (0, 1):
        raise InvalidMonitor(f"insecure must be 0 or 1 (got {monitor.insecure!r})")
    if monitor.ca_file is not None or monitor.insecure:
        if not monitor.url.lower().startswith("https://"):
            raise InvalidMonitor(f"{'--ca-file' if monitor.ca_file else '--insecure'} needs an https:// url")
        if monitor.ca_file is not None and monitor.insecure:
            raise InvalidMonitor("--ca-file and --insecure contradict each other: give one")
        if monitor.insecure and monitor.expires_within_sec is not None:
            raise InvalidMonitor("--expires-within needs a verified certificate: drop --insecure (or use --ca-file)")
    if monitor.ca_file is not None:
        _check_ca_file(monitor.ca_file)


def _check_headers(monitor: Monitor) -> None:
    if monitor.headers is None:
        return
    if not isinstance(monitor.headers, str) or not monitor.headers:
        raise InvalidMonitor("--header is empty")
    for line in monitor.headers.split("\n"):
        name, colon, value = line.partition(":")
        name = name.strip()
        if not colon or not re.match(_TOKEN, name):
            raise InvalidMonitor("--header must be 'Name: value' with a name of letters, digits and -")
        if line_breaker(value):
            raise InvalidMonitor(f"--header {name}: the value contains a character a header cannot carry")
        if name.lower() in _RESERVED or (name.lower() == "authorization" and monitor.basic_auth is not None):
            raise InvalidMonitor(f"--header {name} is set by monitor-tick itself")


def check_own_trust(monitor: Monitor, speaks_tls: bool, needs: str) -> None:
    """--ca-file on a kind that speaks TLS: only on a URL that does (`needs` says how to write
    one), and a file TLS can verify with, on every due row too (a file that goes away makes the
    monitor invalid, never down). Raises InvalidMonitor."""
    if monitor.ca_file is None:
        return
    if not speaks_tls:
        raise InvalidMonitor(f"--ca-file needs {needs}")
    _check_ca_file(monitor.ca_file)


def own_trust(probe: Probe) -> Probe:
    """`probe` with ctx.tls() the monitor's own trust when it has a --ca-file: an SSL context
    of its own, made once a tick for each CA file (the tick's contexts)."""

    async def probe_trusting(monitor: Monitor, ctx: ProbeContext) -> ProbeResult:
        setting = tls_setting(monitor)
        if setting is not None:
            own = ctx.contexts.context(setting) if ctx.contexts is not None else ssl_context_for(setting)
            ctx = ctx._replace(ssl_context=own)
        return await probe(monitor, ctx)

    return probe_trusting


def _check_ca_file(path: str) -> None:
    if not isinstance(path, str) or not path:
        raise InvalidMonitor("--ca-file is empty")
    problem = ca_file_problem(path)
    if problem is not None:
        raise InvalidMonitor(f"--ca-file {path}: {problem}")


def ca_file_problem(path: str) -> str | None:
    """Why `path` is not a CA file TLS can verify with ('No such file or directory', 'not a PEM
    file of certificates'), or None."""
    import ssl

    try:
        ssl_context_for((path, False))
    except ssl.SSLError:
        return "not a PEM file of certificates"
    except OSError as exc:
        return exc.strerror or "cannot be read"
    return None
