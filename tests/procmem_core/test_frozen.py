"""``quick_init``: the same record as the dataclass's own ``__init__``, still frozen."""

from __future__ import annotations

import dataclasses
import inspect
import pickle
from dataclasses import dataclass, field

import pytest

from procmem_core.frozen import quick_init
from procmem_core.gates.records import GateRecord
from procmem_core.graph.ledger import RunRecord
from procmem_core.graph.pack import Pack
from procmem_core.graph.records import EvolveReport, Match, StoredProcedure


def _pair():
    """The same frozen dataclass twice: with its generated ``__init__`` and quick."""

    def make():
        @dataclass(frozen=True)
        class Rec:
            a: int
            b: str = "b"
            c: list = field(default_factory=lambda: [1])
            d: int = field(default=7, init=False)
            e: dict = field(default_factory=dict, init=False)
            f: float = field(default=0.5, kw_only=True)
            g: tuple = field(kw_only=True, default=())
            seen: list = field(default_factory=list, init=False, compare=False)

            def __post_init__(self) -> None:
                self.seen.append((self.a, self.b))

        return Rec

    return make(), quick_init(make())


CALLS = [
    ((1,), {}),
    ((2, "x"), {}),
    ((3, "y", [9]), {"f": 1.5}),
    ((4,), {"g": (1, 2), "c": []}),
    ((), {"a": 5, "b": "z", "f": -1.0}),
]


@pytest.mark.parametrize(("args", "kwargs"), CALLS)
def test_quick_init_builds_the_same_record(args, kwargs):
    plain, quick = _pair()
    p, q = plain(*args, **kwargs), quick(*args, **kwargs)
    assert vars(p) == vars(q)
    assert list(vars(p)) == list(vars(q))  # the same fields in the same order
    assert q.seen == [(q.a, q.b)]  # __post_init__ ran once
    if len(args) < 3 and "c" not in kwargs:
        assert q.c == [1] and q.c is not quick(*args, **kwargs).c  # a fresh default each
    with pytest.raises(dataclasses.FrozenInstanceError):
        q.a = 0


def test_quick_init_keeps_the_signature_and_its_errors():
    plain, quick = _pair()
    assert str(inspect.signature(quick)) == str(inspect.signature(plain))
    for bad in [((), {}), ((1, "b", [], 4), {}), ((1,), {"d": 3}), ((1,), {"h": 1})]:
        with pytest.raises(TypeError):
            plain(*bad[0], **bad[1])
        with pytest.raises(TypeError):
            quick(*bad[0], **bad[1])


def test_quick_init_refuses_what_it_cannot_build():
    @dataclass
    class Loose:
        a: int

    @dataclass(frozen=True, slots=True)
    class Slotted:
        a: int

    for cls in (Loose, Slotted, int):
        with pytest.raises(TypeError, match="quick_init"):
            quick_init(cls)


@pytest.mark.parametrize("cls", [Match, EvolveReport, StoredProcedure, RunRecord, Pack, GateRecord])
def test_the_engine_records_are_quick_and_frozen(cls):
    assert cls.__init__.__qualname__ == f"{cls.__qualname__}.__init__"
    names = cls.__init__.__code__.co_names
    assert "__dict__" in names and "__setattr__" not in names  # fills __dict__ directly
    fields = dataclasses.fields(cls)
    values = {f.name: f"v{i}" for i, f in enumerate(fields)}
    rec = cls(**values)
    assert {f.name: getattr(rec, f.name) for f in fields} == values
    assert rec == dataclasses.replace(rec)
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(rec, fields[0].name, None)


def test_a_run_record_pickles_and_compares_as_before():
    run = RunRecord(3, "k", "ns", 1, ("a", "b"), True, cost=0.5)
    again = pickle.loads(pickle.dumps(run))
    assert again == run and hash(again) == hash(run)
    assert run.to_json()["path"] == ["a", "b"]
    assert RunRecord.from_json(run.to_json()) == run


@pytest.mark.parametrize(("args", "kwargs"), CALLS)
def test_from_values_builds_the_record_init_builds(args, kwargs):
    _, quick = _pair()
    q = quick(*args, **kwargs)
    names = [f.name for f in dataclasses.fields(quick) if f.init]
    again = quick.from_values(*(getattr(q, n) for n in names))
    assert type(again) is quick and vars(again) == vars(q) and list(vars(again)) == list(vars(q))
    assert again.seen == [(q.a, q.b)]  # __post_init__ ran once
    with pytest.raises(dataclasses.FrozenInstanceError):
        again.a = 0


@pytest.mark.parametrize("cls", [Match, EvolveReport, StoredProcedure, RunRecord, GateRecord])
def test_the_engine_records_from_values_equal_keywords(cls):
    fields = [f for f in dataclasses.fields(cls) if f.init]
    values = {f.name: f"v{i}" for i, f in enumerate(fields)}
    assert cls.from_values(*values.values()) == cls(**values)
