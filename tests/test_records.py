"""core/records.py: a record made without typing behaves as typing.NamedTuple's."""

from __future__ import annotations

import pickle
import typing

import pytest

from monitor_tick.core import records


def pair(base: object) -> type:
    class Check(base):  # type: ignore[misc,valid-type]
        """A check's outcome."""

        monitor_id: int
        status: str
        latency_ms: int | None = None
        causes: tuple[str, ...] = ()

        @property
        def up(self) -> bool:
            return self.status == "up"

        def described(self) -> str:
            return f"{self.monitor_id}: {self.status}"

    return Check


OURS, TYPINGS = pair(records.NamedTuple), pair(typing.NamedTuple)


@pytest.mark.parametrize("cls", [OURS, TYPINGS], ids=["records", "typing"])
def test_a_record_is_the_namedtuple_typing_makes(cls: type) -> None:
    check = cls(7, "up")
    assert check == (7, "up", None, ())
    assert check.latency_ms is None and check.up and check.described() == "7: up"
    assert check._replace(status="down").up is False
    assert cls._fields == ("monitor_id", "status", "latency_ms", "causes")
    assert cls._field_defaults == {"latency_ms": None, "causes": ()}
    assert cls.__doc__ == "A check's outcome."
    assert repr(check) == "Check(monitor_id=7, status='up', latency_ms=None, causes=())"
    assert cls.__module__ == __name__ and cls.__bases__ == (tuple,)
    assert list(cls.__annotations__) == list(cls._fields)
    assert check._asdict() == {"monitor_id": 7, "status": "up", "latency_ms": None, "causes": ()}
    with pytest.raises(AttributeError):
        check.status = "down"  # type: ignore[misc]
    with pytest.raises(TypeError):
        cls(7)


def test_its_annotations_stay_the_strings_they_are() -> None:
    assert OURS.__annotations__["latency_ms"] == "int | None"
    assert isinstance(TYPINGS.__annotations__["latency_ms"], typing.ForwardRef)


def test_a_record_pickles_as_a_tuple_of_its_module() -> None:
    assert pickle.loads(pickle.dumps(Module(1))) == Module(1)


class Module(records.NamedTuple):
    value: int


@pytest.mark.parametrize("base", [records.NamedTuple, typing.NamedTuple], ids=["records", "typing"])
def test_it_refuses_what_typing_refuses(base: object) -> None:
    with pytest.raises(TypeError, match="Non-default namedtuple field b cannot follow default field"):

        class Order(base):  # type: ignore[misc,valid-type]
            a: int = 0
            b: int

    with pytest.raises(AttributeError, match="Cannot overwrite NamedTuple attribute _replace"):

        class Own(base):  # type: ignore[misc,valid-type]
            a: int

            def _replace(self) -> None: ...
