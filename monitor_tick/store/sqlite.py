"""The SQLite engine: opening the database file (checks, PRAGMAs, schema and migrations/),
read-only opens, backup and check, and SQLite's errors in one line. The only module of the
store that imports sqlite3 or touches the file; the other modules run their SQL on the
connection it opens.

Errors a user can cause or meet (missing directory, foreign file, locked database, read-only
file, newer schema, full disk) are raised as StoreError with a one-line message.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable, Iterator

from monitor_tick.store.db import OlderSchemaError, StoreError, script_statements

TYPE_CHECKING = False  # true for type checkers: the tick never imports typing (core/records.py)
if TYPE_CHECKING:
    from typing import TypeVar

    _T = TypeVar("_T")

SCHEMA_VERSION = 21
DEFAULT_BUSY_TIMEOUT_S = 10.0


class Connection(sqlite3.Connection):
    """A SQLite connection as the store's modules use it (see db.py: the PostgreSQL engine's
    connection has the same few methods)."""

    engine = "sqlite"
    statements: dict[str, str] = {}  # SQLite runs every statement as the modules write it
    path: str
    file_id: tuple[int, int] | None  # the file `path` named when it was opened (see _file_id)

    def begin_write(self) -> None:
        # the write lock up front: a deferred transaction that reads and then writes gets
        # SQLITE_BUSY at once in WAL mode, ignoring the busy timeout
        self.execute("BEGIN IMMEDIATE")

    def rollback_quietly(self) -> None:
        self.execute("ROLLBACK")

    def lost(self) -> bool:
        """Whether `path` no longer names the file this connection has open (replaced by a
        restore, moved or removed): a process that keeps it open (`serve`) opens `path` again.
        Closing this connection then is safe: SQLite sees that its file has moved, so it neither
        checkpoints nor deletes the -wal, which by its name is now the new file's."""
        return _file_id(self.path) != self.file_id


# What the statements raise (callers catch it and word it with describe_error)
DatabaseError = sqlite3.Error
# The -wal file: checkpointed once it holds this much, and cut back to it when SQLite starts it
# over (journal_size_limit). Without the cut, a -wal grown while a reader held a transaction open
# would keep its size for as long as any process (`serve`) has the database open.
WAL_LIMIT_BYTES = 256 * 1024
_PAGE_BYTES = 4096  # SQLite's default page size; nothing here changes it
_SQLITE_MAGIC = b"SQLite format 3\x00"


def schema_sql() -> str:
    from importlib import resources  # only when a database is created: an idle tick skips it

    return resources.files("monitor_tick").joinpath("schema.sql").read_text(encoding="utf-8")


def db_path_problem(path: str) -> str | None:
    """Why `path` cannot be monitor-tick's database file, in a few words; None when it can be.
    An empty path and SQLite's ':memory:' would each give a database that vanishes when the
    command ends (or, through a URI, a stray file named ':memory:')."""
    if path in ("", ":memory:"):
        return f"{path or repr(path)} is not a database file (monitor-tick keeps its state in a file)"
    return None


def open_db(
    path: str, *, create: bool = True, migrate: bool = True, busy_timeout_s: float = DEFAULT_BUSY_TIMEOUT_S
) -> Connection:
    """Open (and on first use create, readable by its owner only) the database at `path`;
    upgrade an older schema (see migrations/), unless `migrate` is false (read-only commands):
    then an older schema is refused.

    Raises StoreError, having created or changed nothing, when the directory is missing or not
    writable, the file is read-only, not a monitor-tick database, or its schema is newer than
    this program, or `path` is not a file name (db_path_problem).
    """
    problem = db_path_problem(path)
    if problem:
        raise StoreError(problem)
    directory = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(directory):
        raise StoreError(f"database directory does not exist: {directory}")
    exists = os.path.exists(path)
    if exists:
        _check_header(path)
        if not os.access(path, os.W_OK):
            raise StoreError(f"database {path} is read-only")
    if not os.access(directory, os.W_OK):
        raise StoreError(f"database directory {directory} is not writable (SQLite keeps its journal there)")
    if not exists:
        if not create:
            raise StoreError(f"no database at {path}")
        _create_private_file(path)

    def prepare(conn: Connection) -> None:
        _configure(conn, busy_timeout_s)
        _ensure_schema(conn, path, migrate=migrate)

    return _connect(path, "rw", busy_timeout_s, prepare, describe_error)


def _connect(
    path: str,
    mode: str,
    busy_timeout_s: float,
    prepare: Callable[[Connection], None],
    describe: Callable[[sqlite3.Error, str], str],
) -> Connection:
    """Connect to `path` in SQLite's `mode` (rw, ro) and run `prepare` on the connection; on any
    error close it and raise StoreError (`describe` words a sqlite3 error)."""
    # before connecting: a file swapped in between is then taken for replaced once too often
    # (one needless reopen), never the other way round (a replacement missed for good)
    file_id = _file_id(path)
    try:
        conn = sqlite3.connect(
            f"file:{_uri_path(path)}?mode={mode}",
            uri=True,
            timeout=busy_timeout_s,
            isolation_level=None,
            check_same_thread=False,
            factory=Connection,
        )
    except sqlite3.Error as exc:
        raise StoreError(f"cannot open database {path}: {exc}") from None
    conn.path, conn.file_id = path, file_id
    try:
        prepare(conn)
    except sqlite3.Error as exc:
        conn.close()
        raise StoreError(describe(exc, path)) from None
    except StoreError:
        conn.close()
        raise
    return conn


def _file_id(path: str) -> tuple[int, int] | None:
    """The file `path` names, as (device, inode); None when there is none."""
    try:
        found = os.stat(path)
    except OSError:
        return None
    return found.st_dev, found.st_ino


# What urllib.parse.quote leaves as it is in a path (its unreserved characters, and "/"); it is not
# imported for this alone (with ipaddress, about a tenth of an idle tick's own instructions).
_URI_PATH_SAFE = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-~/")


def _uri_path(path: str) -> str:
    """The absolute path as a URI's path, as urllib.parse.quote writes it: '%', '?' and '#' are
    URI syntax, not file name, and every byte of a non-ASCII name is escaped."""
    return "".join(chr(byte) if byte in _URI_PATH_SAFE else f"%{byte:02X}" for byte in os.path.abspath(path).encode())


def _create_private_file(path: str) -> None:
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return  # another process created it a moment ago: it initialises the schema
    except OSError as exc:
        raise StoreError(f"cannot create database {path}: {exc.strerror}") from None
    os.close(fd)


def _check_header(path: str) -> None:
    try:
        with open(path, "rb") as handle:
            head = handle.read(len(_SQLITE_MAGIC))
    except OSError as exc:
        raise StoreError(f"cannot read database {path}: {exc.strerror}") from None
    if head and head != _SQLITE_MAGIC:
        raise StoreError(f"not a SQLite database: {path}")


def set_busy_timeout(conn: Connection, busy_timeout_s: float) -> None:
    """From now on, a write waits at most `busy_timeout_s` (>= 0) for another writer's lock."""
    conn.execute(f"PRAGMA busy_timeout = {int(max(busy_timeout_s, 0) * 1000)}")


def _configure(conn: Connection, busy_timeout_s: float) -> None:
    set_busy_timeout(conn, busy_timeout_s)
    conn.execute("PRAGMA foreign_keys = ON")
    conn.execute("PRAGMA synchronous = NORMAL")
    # a passive checkpoint (it never waits for a reader) after any commit that leaves the -wal
    # over WAL_LIMIT_BYTES, and the file cut back to that once the checkpoint has caught up
    conn.execute(f"PRAGMA wal_autocheckpoint = {WAL_LIMIT_BYTES // _PAGE_BYTES}")
    conn.execute(f"PRAGMA journal_size_limit = {WAL_LIMIT_BYTES}")


def open_read_only(path: str, *, any_version: bool = False) -> Connection:
    """Open the database at `path` for reading only (SQLite's mode=ro): never created, written or
    upgraded, so a read-only file (or one in a read-only directory) still serves the commands
    that only read. Raises StoreError when there is no database, it is not monitor-tick's, its
    schema is not this program's (unless `any_version`: backup and check; an older one raises
    OlderSchemaError), or SQLite cannot read it."""
    problem = db_path_problem(path)
    if problem:
        raise StoreError(problem)
    if not os.path.isfile(path):
        raise StoreError(f"no database at {path}")
    _check_header(path)

    def prepare(conn: Connection) -> None:
        conn.execute(f"PRAGMA busy_timeout = {int(DEFAULT_BUSY_TIMEOUT_S * 1000)}")
        version = conn.execute("PRAGMA user_version").fetchone()[0]  # the first read of the file
        if version == 0:
            _refuse_foreign(conn, path)
            raise StoreError(f"no database at {path} (the file is empty: no command has written it yet)")
        if not any_version and version != SCHEMA_VERSION:
            check_version(version, path, migrate=False, read_only=not _may_write(path))

    return _connect(path, "ro", DEFAULT_BUSY_TIMEOUT_S, prepare, _read_error)


def backup(path: str, out_path: str) -> None:
    """Copy the database at `path` to the new file `out_path`, readable by its owner only, with
    SQLite's online backup API in one step: one read transaction, so the copy is one consistent
    snapshot while other processes keep committing (in WAL mode a reader holds up no writer).
    The copy is written under a temporary name beside `out_path` and linked into place, so a
    failed backup leaves nothing at `out_path`, and an existing file there is never replaced.
    Raises StoreError."""
    problem = db_path_problem(out_path)
    if problem:
        raise StoreError(problem)
    if os.path.lexists(out_path):
        raise StoreError(f"{out_path} exists; a backup never overwrites a file")
    directory = os.path.dirname(os.path.abspath(out_path))
    source = open_read_only(path, any_version=True)  # a file about to be upgraded is worth a copy
    try:
        import tempfile  # only here: an idle tick never imports it

        fd, temporary = tempfile.mkstemp(prefix=f".{os.path.basename(out_path)}.", suffix=".tmp", dir=directory)
    except OSError as exc:
        source.close()
        raise StoreError(f"backup not written: {exc.strerror}: {directory}") from None
    os.close(fd)  # mkstemp made it 0600; SQLite gives its journal the same mode
    try:
        copy = sqlite3.connect(temporary, isolation_level=None)
        try:
            source.backup(copy)  # pages=-1: every page in one step
        finally:
            copy.close()
        os.link(temporary, out_path)  # unlike rename, fails when out_path appeared meanwhile
    except FileExistsError:
        raise StoreError(f"{out_path} exists; a backup never overwrites a file") from None
    except sqlite3.Error as exc:
        raise StoreError(describe_error(exc, path)) from None
    except OSError as exc:
        raise StoreError(f"backup not written: {exc.strerror}: {out_path}") from None
    finally:
        source.close()
        os.unlink(temporary)


def integrity_problems(path: str) -> list[str]:
    """What SQLite's integrity and foreign-key checks find wrong with the database at `path`
    (empty when it is sound), read-only. Raises StoreError when it cannot be opened at all."""
    conn = open_read_only(path, any_version=True)
    try:
        problems = [row[0] for row in conn.execute("PRAGMA integrity_check") if row[0] != "ok"]
        problems += [
            f"a {table} row (rowid {rowid}) refers to a missing {parent} row"
            for table, rowid, parent, _ in conn.execute("PRAGMA foreign_key_check")
        ]
    except sqlite3.DatabaseError as exc:  # "database disk image is malformed": the check stopped
        problems = [str(exc)]
    finally:
        conn.close()
    return problems


def _read_error(exc: sqlite3.Error, path: str) -> str:
    """describe_error, and the one case only a reader meets: a WAL database is read through its
    -shm file, which exists while a writer has the database open; with none open, a reader must
    create it, and cannot in a directory it may not write. (immutable=1 would skip the -shm, but
    then a tick writing meanwhile could hand the reader a torn page.)"""
    directory = os.path.dirname(os.path.abspath(path))
    if not os.access(directory, os.W_OK) and not os.path.exists(f"{path}-shm"):
        return f"cannot read database {path}: SQLite needs {path}-shm beside it and {directory} is not writable"
    return describe_error(exc, path)


def _refuse_foreign(conn: Connection, path: str) -> None:
    """Raise StoreError when a database at schema version 0 already has tables (not ours)."""
    if conn.execute("SELECT count(*) FROM sqlite_schema WHERE type = 'table'").fetchone()[0]:
        raise StoreError(f"{path} is a SQLite database but not a monitor-tick one")


def check_version(version: int, path: str, *, migrate: bool, read_only: bool = False) -> None:
    """Raise StoreError for a schema this program cannot use: newer, or older without `migrate`
    (OlderSchemaError; `read_only`: this process may not write the file, which the message
    says). `path`: the database as messages name it; PostgreSQL's engine words its versions the
    same."""
    if version > SCHEMA_VERSION:
        raise StoreError(
            f"database {path} has schema version {version}, newer than this monitor-tick "
            f"understands ({SCHEMA_VERSION}); upgrade monitor-tick"
        )
    if 0 < version < SCHEMA_VERSION and not migrate:
        raise OlderSchemaError(
            f"database {path} has schema version {version}, older than this monitor-tick's "
            f"({SCHEMA_VERSION}){', and is read-only here' if read_only else ''}; "
            "the next tick (or any command that writes) upgrades it"
        )


def _may_write(path: str) -> bool:
    """Whether this process may write the database file at `path`: the file, and the directory
    where SQLite keeps its journal (open_db refuses either, in its own words)."""
    return os.access(path, os.W_OK) and os.access(os.path.dirname(os.path.abspath(path)), os.W_OK)


def _ensure_schema(conn: Connection, path: str, *, migrate: bool) -> None:
    version = conn.execute("PRAGMA user_version").fetchone()[0]
    if version == SCHEMA_VERSION:
        return
    check_version(version, path, migrate=migrate)
    # table rebuilds (see migrations/) need foreign keys off, and that cannot change inside a
    # transaction; foreign_key_check below stands in for them before the upgrade commits
    conn.execute("PRAGMA foreign_keys = OFF")
    conn.execute("BEGIN IMMEDIATE")
    said: list[str] = []  # what the upgrade's steps say, once it has committed
    try:
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        if version == SCHEMA_VERSION:  # another process initialised or upgraded it while we waited
            conn.execute("COMMIT")
            return
        if version == 0:
            _refuse_foreign(conn, path)
            for statement in _statements(schema_sql()):
                conn.execute(statement)
        else:
            said = _migrate(conn, path, version)
        conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    finally:
        conn.execute("PRAGMA foreign_keys = ON")
    conn.execute("PRAGMA journal_mode = WAL")
    if said:
        from monitor_tick.store import migrations  # only after an upgrade

        migrations.announce(said)


def _migrate(conn: Connection, path: str, version: int) -> list[str]:
    """Upgrade a database at schema `version` to SCHEMA_VERSION inside the caller's transaction:
    every step of migrations/ above `version`, in order. A failed step raises, and the caller
    rolls all of them back: the file stays at `version`, unchanged. Returns the lines the steps
    say, for the caller to say once the upgrade has committed (migrations.announce)."""
    from monitor_tick.store import migrations  # only when upgrading: an idle tick never reads them

    lines: list[str] = []
    for migration in migrations.steps_after(version):
        try:
            if migration.upgrade is not None:
                lines += migration.upgrade(conn)
            for statement in _statements(migration.sql):
                conn.execute(statement)
        except sqlite3.Error as exc:
            raise StoreError(f"cannot upgrade database {path} to schema version {migration.version}: {exc}") from None
    broken = conn.execute("PRAGMA foreign_key_check").fetchall()
    if broken:
        raise StoreError(f"cannot upgrade database {path}: {len(broken)} rows would break foreign keys")
    return lines


def _statements(script: str) -> Iterator[str]:
    """Split schema.sql or a migration into statements (no semicolons inside strings or triggers)."""
    return (statement for statement in script_statements(script) if sqlite3.complete_statement(statement))


def describe_error(exc: sqlite3.Error, path: str) -> str:
    text = str(exc)
    # SQLite says "database or disk is full" when a write runs out of space, but "disk I/O error"
    # when it is the -shm file it cannot allocate; the disk's free space tells the two apart
    if "disk is full" in text or ("disk I/O" in text and _no_space_left(path)):
        return f"no space left on the disk for database {path} (free some: the next tick runs normally)"
    if "locked" in text or "busy" in text:
        return f"database {path} is locked by another process (gave up waiting)"
    if "readonly" in text or "read-only" in text:
        return f"database {path} is read-only"
    if "not a database" in text:
        return f"not a SQLite database: {path}"
    if "disk I/O" in text:
        return f"disk I/O error on database {path}"
    return f"database error on {path}: {text}"


# less free space than this is a full disk for SQLite: the -shm file alone takes 32 KiB
_FULL_BELOW_BYTES = 64 * 1024


def _no_space_left(path: str) -> bool:
    """True when the file system holding `path` has (almost) no space left for this user."""
    try:
        fs = os.statvfs(os.path.dirname(os.path.abspath(path)))
    except OSError:
        return False
    blocks = fs.f_bfree if os.geteuid() == 0 else fs.f_bavail  # root may use the reserved blocks
    return blocks * fs.f_frsize < _FULL_BELOW_BYTES


def read_db(path: str, read: Callable[[Connection], _T], *, upgrade: bool = False) -> _T:
    """Open the database at `path` read-only (open_read_only), call `read` with the connection,
    close it. `upgrade` (the commands that only read, but for dry runs): an older schema in a
    file this process may write is upgraded first, as a tick upgrades it (open_db). Raises
    StoreError, for sqlite3 errors during `read` too."""
    try:
        conn = open_read_only(path)
    except OlderSchemaError:
        if not (upgrade and _may_write(path)):
            raise
        open_db(path, create=False).close()  # migrations/, all steps in one transaction
        conn = open_read_only(path)
    try:
        return read(conn)
    except sqlite3.Error as exc:
        raise StoreError(describe_error(exc, path)) from None
    finally:
        conn.close()
