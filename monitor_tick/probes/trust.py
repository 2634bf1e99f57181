"""The tick's default trust for the kinds that speak TLS themselves (tls://, smtp, ws, ...): the
CA bundle HTTP checks trust too (request.curl_trust_options), loaded on the first TLS handshake. Imported only
when a check first needs TLS (request.ssl_context): it imports ssl."""

from __future__ import annotations

import os
import ssl
import sys

TYPE_CHECKING = False  # true for type checkers: the tick never imports typing (core/records.py)
if TYPE_CHECKING:
    from typing import Any


class DefaultTrust(ssl.SSLContext):
    """The default trust -- the CA bundle in SSL_CERT_FILE, else the directory in
    SSL_CERT_DIR, else certifi's -- loaded on the first TLS handshake, not when made: loading a
    bundle costs tens of milliseconds, which a tick with no https:// or tls:// monitor, nor a
    redirect to one, never needs to spend. Otherwise ssl.create_default_context's context."""

    def __new__(cls, cafile: str | None, capath: str | None) -> DefaultTrust:
        return super().__new__(cls, ssl.PROTOCOL_TLS_CLIENT)

    def __init__(self, cafile: str | None, capath: str | None) -> None:
        """`cafile`, `capath`: request.trust_locations(), read when the tick made it."""
        self._loaded = False
        self._failed: BaseException | None = None
        # as ssl.create_default_context sets them
        if sys.version_info >= (3, 13):
            self.verify_flags |= ssl.VERIFY_X509_STRICT | ssl.VERIFY_X509_PARTIAL_CHAIN
        if os.environ.get("SSLKEYLOGFILE"):
            self.keylog_filename = os.environ["SSLKEYLOGFILE"]
        self._cafile, self._capath = cafile, capath

    def _load(self) -> None:
        if self._loaded:
            return
        if self._failed is not None:
            raise self._failed
        try:
            self._load_bundle()
        except (OSError, ssl.SSLError) as exc:
            self._failed = exc  # said once per check, not read again for each
            raise
        self._loaded = True

    def _load_bundle(self) -> None:
        if self._cafile or self._capath:
            self.load_verify_locations(cafile=self._cafile, capath=self._capath)
        else:
            import certifi  # the default where no CA setting is given, as for HTTP checks

            self.load_verify_locations(cafile=certifi.where())

    def wrap_socket(self, *args: Any, **kwargs: Any) -> ssl.SSLSocket:
        self._load()
        return super().wrap_socket(*args, **kwargs)

    def wrap_bio(self, *args: Any, **kwargs: Any) -> ssl.SSLObject:
        self._load()
        return super().wrap_bio(*args, **kwargs)
