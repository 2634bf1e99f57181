"""Step 14: names in Unicode NFC, on both engines.

Names are now stored and compared in NFC (core/model.normal_name): 'café' with é as one
character and 'café' as e and a combining accent print the same, and are one name. Older
versions stored names as typed, so two monitors (or owners, or plans) may hold one name in two
forms. Every name is put in NFC; where two then collide, the one already in NFC keeps it (what
was typed to find it still finds it), else the oldest, and the others become 'café (2)', 'café
(3)', ..., each said in one line. Group names are put in NFC too: groups that printed the same
become one section of the status page. Written in Python because SQLite has no normalisation.
"""

from __future__ import annotations

import unicodedata
from typing import TYPE_CHECKING

from monitor_tick.core.model import normal_name

if TYPE_CHECKING:
    from monitor_tick.store.db import Connection

# the tables whose names are unique, and what the upgrade calls their rows
_NAMED = (("plans", "plan"), ("owners", "owner"), ("monitors", "monitor"))


def upgrade(conn: Connection) -> list[str]:
    """Put every name in NFC, renaming those that then collide; returns a line per rename."""
    said = []
    for table, what in _NAMED:
        rows = [(int(row_id), str(name)) for row_id, name in conn.execute(f"SELECT id, name FROM {table} ORDER BY id")]
        # each name's row: first the names already in NFC, which stay as they are
        holders = {name: row_id for row_id, name in rows if unicodedata.is_normalized("NFC", name)}
        renamed: set[str] = set()  # names given by this step to a row that held another
        for row_id, name in rows:
            if holders.get(name) == row_id:
                continue
            wanted = new = normal_name(name)
            n = 2
            while new in holders:
                new, n = f"{wanted} ({n})", n + 1
            # never another row's name: `new` is in NFC, unlike every name not yet put in it
            holders[new] = row_id
            conn.execute(f"UPDATE {table} SET name = ? WHERE id = ?", (new, row_id))
            if new != wanted:
                renamed.add(new)
                if wanted in renamed:
                    why = "was renamed to that name in this upgrade"
                else:
                    why = "has the same name in another Unicode form"
                said.append(f"{what} {row_id} renamed {name!r} -> {new!r}: {what} {holders[wanted]} {why}")
    groups = conn.execute("SELECT DISTINCT group_name FROM monitors WHERE group_name IS NOT NULL").fetchall()
    for (group,) in groups:
        if not unicodedata.is_normalized("NFC", group):
            conn.execute("UPDATE monitors SET group_name = ? WHERE group_name = ?", (normal_name(group), group))
    return said
