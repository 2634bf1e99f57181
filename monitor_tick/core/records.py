"""The tick's records: `class X(NamedTuple)` as typing writes it, made without typing.

Why: every tick, idle or not, defines about thirty records in a fresh process. typing.NamedTuple
turns each field's annotation into a ForwardRef, compiling its text (the annotations are strings:
`from __future__ import annotations`), and importing typing is about a quarter of what an idle
tick adds to the interpreter (bench/instructions.py). Here a record is what typing.NamedTuple
makes, a collections.namedtuple with the class body's defaults, methods and docstring, and its
annotations kept as the strings they are, as a dataclass keeps them.

Type checkers see typing.NamedTuple itself. A module of the tick imports its typing names in an
`if TYPE_CHECKING:` block, with `TYPE_CHECKING = False` set in the module (a name type checkers
read as true), so that the idle tick never imports typing.
"""

from __future__ import annotations

import collections

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import NamedTuple as NamedTuple
else:
    # as typing's: what a class body may not set, and what it sets that is not copied over
    _PROHIBITED = frozenset(
        {
            "__new__",
            "__init__",
            "__slots__",
            "__getnewargs__",
            "_fields",
            "_field_defaults",
            "_make",
            "_replace",
            "_asdict",
            "_source",
        }
    )
    _SPECIAL = frozenset({"__module__", "__name__", "__annotations__"})

    class _RecordMeta(type):
        def __new__(cls, typename: str, bases: tuple[type, ...], ns: dict[str, object]) -> type:
            if bases != (_Record,):
                raise TypeError("a record inherits from NamedTuple alone")
            fields: dict[str, str] = ns.get("__annotations__", {})  # type: ignore[assignment]
            defaulted: list[str] = []
            for name in fields:
                if name in ns:
                    defaulted.append(name)
                elif defaulted:
                    raise TypeError(f"Non-default namedtuple field {name} cannot follow default field {defaulted[-1]}")
            record = collections.namedtuple(
                typename, list(fields), defaults=[ns[name] for name in defaulted], module=ns["__module__"]
            )
            record.__annotations__ = record.__new__.__annotations__ = dict(fields)
            for key, value in ns.items():
                if key in _PROHIBITED:
                    raise AttributeError("Cannot overwrite NamedTuple attribute " + key)
                if key not in _SPECIAL and key not in record._fields:
                    setattr(record, key, value)
            return record

    _Record = type.__new__(_RecordMeta, "NamedTuple", (), {})

    def NamedTuple(typename: str, fields: None = None, /) -> type:
        """Only the class syntax: `class X(NamedTuple): ...`."""
        raise TypeError("use the class syntax: class X(NamedTuple)")

    NamedTuple.__mro_entries__ = lambda bases: (_Record,)  # type: ignore[attr-defined]
