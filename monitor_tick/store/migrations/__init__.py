"""Schema migrations: ordered SQL files, one per schema version after the first.

`NNNN_what.sql` turns a database at schema version NNNN - 1 into version NNNN. `schema.sql`
is always the whole schema at the newest version (what a new database gets); the steps are
for files that an older monitor-tick made. A test holds the two to the same result: a version 1
file upgraded through every step has exactly the tables, columns and indexes of schema.sql.

How a step is written (SQLite):
- A new column: `ALTER TABLE t ADD COLUMN ...`, with the same text as its last line in the
  table's CREATE in schema.sql (the new column goes at the end of the table there too).
- A changed constraint: the table rebuild of https://sqlite.org/lang_altertable.html#otheralter
  (CREATE TABLE t_new, INSERT ... SELECT, DROP TABLE t, ALTER TABLE t_new RENAME TO t, then
  its indexes again). Foreign keys are off while steps run and checked before the commit.
- No step reads the clock, and no step is ever edited once released: fix forward.

PostgreSQL (whose support began at version 3) has its own steps, `NNNN_what.postgres.sql`, one
for every SQLite step after 0003 with the same number, to the same result as
schema_postgres.sql (a test holds both engines' steps to the same versions).

A step that changes rows in a way SQL cannot say on both engines (SQLite has no Unicode
normalisation) is `NNNN_what.py` instead, one module for both: its `upgrade(conn)` runs the
store's engine-neutral SQL on the connection (db.py) and returns what the upgrade says, one line
each, printed on stderr once the upgrade has committed (announce).

All pending steps run in one transaction, applied by the first command that writes (a tick,
add, ...), or on a SQLite file it may write by a command that only reads (list, report, ...;
never a dry run, and never on PostgreSQL: see store.read_db); a failed step leaves the
database as it was.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable
from dataclasses import dataclass
from importlib import resources
from typing import Any


@dataclass(frozen=True)
class Step:
    version: int  # the schema version this step produces
    name: str
    sql: str
    # a Python step's upgrade(conn) -> lines to say (NNNN_what.py); None for a SQL step
    upgrade: Callable[[Any], list[str]] | None = None


# PostgreSQL support began at schema version 3: its steps start after it
FIRST_POSTGRES_VERSION = 3
_SUFFIX = {"sqlite": ".sql", "postgresql": ".postgres.sql"}


def steps(engine: str = "sqlite") -> list[Step]:
    """Every step of `engine` ("sqlite": NNNN_what.sql; "postgresql": NNNN_what.postgres.sql),
    in version order. Raises ValueError when the files skip or repeat a version."""
    found = []
    suffix = _SUFFIX[engine]
    for entry in resources.files(__name__).iterdir():
        name = entry.name
        number, _, rest = name.partition("_")
        if name.endswith(".py") and number.isdecimal():  # a step of both engines
            module = importlib.import_module(f"{__name__}.{name.removesuffix('.py')}")
            found.append(Step(int(number), rest.removesuffix(".py"), "", module.upgrade))
        elif name.endswith(suffix) and (engine == "postgresql" or not name.endswith(_SUFFIX["postgresql"])):
            found.append(Step(int(number), rest.removesuffix(suffix), entry.read_text(encoding="utf-8")))
    found.sort(key=lambda step: step.version)
    first = 2 if engine == "sqlite" else FIRST_POSTGRES_VERSION + 1
    if [step.version for step in found] != list(range(first, len(found) + first)):
        raise ValueError(
            f"{engine} migrations must be numbered from {first:04} without gaps: {[s.version for s in found]}"
        )
    return found


def steps_after(version: int, engine: str = "sqlite") -> list[Step]:
    """The steps that upgrade a database of `engine` at schema `version` to the newest."""
    return [step for step in steps(engine) if step.version > version]


def announce(lines: list[str]) -> None:
    """What the steps of an upgrade that has committed say: a line each on stderr."""
    for line in lines:
        print(f"monitor-tick: upgrade: {line}", file=sys.stderr)
