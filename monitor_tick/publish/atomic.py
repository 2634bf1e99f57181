"""Replace a file so that readers see the old content or the new, never a half-written file."""

from __future__ import annotations

import contextlib
import os
import tempfile

PUBLISHED_MODE = 0o644  # pages, badges and metrics are read by a web server or node_exporter


def write_text_atomic(path: str, text: str, *, mode: int = PUBLISHED_MODE) -> None:
    """Write `text` (UTF-8) to a hidden temporary file next to `path`, then rename it over `path`.

    The rename is atomic within one filesystem, which is why the temporary file lives in the
    same directory; its name starts with '.' and ends in '.tmp', so a textfile collector
    globbing '*.prom' never picks it up. No fsync: the files are rewritten every minute, and a
    crash costs at most one stale minute. Raises OSError; the old file is then left as it was.
    """
    directory = os.path.dirname(os.path.abspath(path))
    fd, temporary = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as handle:
            handle.write(text)
        os.chmod(temporary, mode)
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


def describe_os_error(exc: OSError) -> str:
    """An OSError in one line: 'Permission denied: /var/www/status/index.html'."""
    return f"{exc.strerror}: {exc.filename}" if exc.strerror and exc.filename else str(exc)
