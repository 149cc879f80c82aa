"""iosim.record.Record against `dataclasses`: each sample class is declared twice, once as a frozen
slotted dataclass and once as a Record, and every behaviour iosim relies on is compared between
the two (construction, defaults, errors, equality, hashing, repr, immutability, replace, fields,
asdict, pickling), so the reference is the standard library, not the record's own code."""

from __future__ import annotations

import copy
import dataclasses
import pickle
from collections.abc import Callable
from typing import Any

import pytest

from iosim.record import Record, asdict, field, field_names, fields, replace


@dataclasses.dataclass(frozen=True, slots=True)
class PointD:
    x: int
    y: int = 0
    tags: tuple[str, ...] = ()


class PointR(Record):
    x: int
    y: int = 0
    tags: tuple[str, ...] = ()


@dataclasses.dataclass(frozen=True, slots=True)
class BagD:
    name: str
    items: list[int] = dataclasses.field(default_factory=list)
    cache: dict[str, int] = dataclasses.field(default_factory=dict, repr=False, compare=False)


class BagR(Record):
    name: str
    items: list[int] = field(default_factory=list)
    cache: dict[str, int] = field(default_factory=dict, repr=False, compare=False)


@dataclasses.dataclass(frozen=True, slots=True)
class OneD:
    value: float


class OneR(Record):
    value: float


@dataclasses.dataclass(frozen=True, slots=True)
class NestD:
    point: PointD
    bags: tuple[BagD, ...]
    extra: dict[str, Any] = dataclasses.field(default_factory=dict)


class NestR(Record):
    point: PointR
    bags: tuple[BagR, ...]
    extra: dict[str, Any] = field(default_factory=dict)


PAIRS = [(PointD, PointR), (BagD, BagR), (OneD, OneR)]
CALLS: list[tuple[type, type, tuple[Any, ...], dict[str, Any]]] = [
    (PointD, PointR, (1,), {}), (PointD, PointR, (1, 2), {}), (PointD, PointR, (1, 2, ("a",)), {}),
    (PointD, PointR, (), {"x": 3, "tags": ("b",)}), (PointD, PointR, (4,), {"y": 5}),
    (BagD, BagR, ("a",), {}), (BagD, BagR, ("a", [1, 2]), {"cache": {"k": 1}}),
    (OneD, OneR, (float("nan"),), {}), (OneD, OneR, (), {"value": 2.5}),
]
BAD_CALLS: list[tuple[type, type, tuple[Any, ...], dict[str, Any]]] = [
    (PointD, PointR, (), {}), (PointD, PointR, (1, 2, (), 4), {}), (PointD, PointR, (1,), {"x": 2}),
    (PointD, PointR, (1,), {"z": 2}), (BagD, BagR, (), {"items": []}), (OneD, OneR, (), {}),
]


def hash_or_error(value: object) -> int | str:
    try:
        return hash(value)
    except TypeError as exc:
        return str(exc)


def same_text(d_text: str, r_text: str, d: type, r: type) -> None:
    assert d_text.replace(d.__qualname__, "C") == r_text.replace(r.__qualname__, "C")


@pytest.mark.parametrize(("d", "r", "args", "kwargs"), CALLS)
def test_construction_values_repr_and_hash_match_dataclasses(d: type, r: type, args: tuple[Any, ...],
                                                             kwargs: dict[str, Any]) -> None:
    a, b = d(*args, **kwargs), r(*args, **kwargs)
    assert [getattr(a, f.name) for f in dataclasses.fields(a)] == \
        [getattr(b, name) for name in field_names(b)]
    same_text(repr(a), repr(b), d, r)
    assert hash_or_error(a) == hash_or_error(b)  # the tuple of the compared fields, or unhashable
    assert (b == r(*args, **kwargs)) == (a == d(*args, **kwargs))  # nan: unequal in both
    assert b == b and a == a  # identity first, as a tuple comparison is


@pytest.mark.parametrize(("d", "r", "args", "kwargs"), BAD_CALLS)
def test_a_call_that_does_not_fit_raises_the_same_type_error(d: type, r: type, args: tuple[Any, ...],
                                                             kwargs: dict[str, Any]) -> None:
    with pytest.raises(TypeError) as from_d:
        d(*args, **kwargs)
    with pytest.raises(TypeError) as from_r:
        r(*args, **kwargs)
    same_text(str(from_d.value), str(from_r.value), d, r)


@pytest.mark.parametrize(("d", "r"), PAIRS)
def test_fields_slots_and_match_args_match_dataclasses(d: type, r: type) -> None:
    assert [(f.name, f.type) for f in dataclasses.fields(d)] == [(f.name, f.type) for f in fields(r)]
    assert d.__slots__ == r.__slots__
    assert d.__match_args__ == r.__match_args__
    assert not hasattr(r(*[1] * len(r.__match_args__)) if r is not BagR else r("a"), "__dict__")


def test_equality_needs_the_same_class_and_ignores_compare_false_fields() -> None:
    assert PointR(1, 2) == PointR(1, 2) and PointR(1, 2) != PointR(1, 3)
    assert PointR(1) != OneR(1) and (PointD(1) != OneD(1))
    assert BagR("a", [1], {"x": 1}) == BagR("a", [1], {"y": 2})
    assert BagD("a", [1], {"x": 1}) == BagD("a", [1], {"y": 2})
    assert PointR(1).__eq__((1, 0, ())) is NotImplemented
    assert len({PointR(1, 2), PointR(1, 2), PointR(2, 1)}) == 2


def test_default_factory_makes_a_fresh_value_per_instance() -> None:
    first, second = BagR("a"), BagR("b")
    first.items.append(1)
    assert second.items == [] and BagD("a").items is not BagD("b").items


@pytest.mark.parametrize("change", [lambda p: setattr(p, "x", 5), lambda p: delattr(p, "y"),
                                    lambda p: setattr(p, "x", p.x)])
def test_assignment_raises_frozen_instance_error_as_dataclasses(change: Callable[[Any], None]) -> None:
    with pytest.raises(dataclasses.FrozenInstanceError) as from_d:
        change(PointD(1))
    with pytest.raises(dataclasses.FrozenInstanceError) as from_r:
        change(PointR(1))
    assert str(from_d.value) == str(from_r.value)


def test_replace_matches_dataclasses_replace() -> None:
    assert replace(PointR(1, 2), y=7) == PointR(1, 7)
    same_text(repr(dataclasses.replace(PointD(1, 2), tags=("t",))),
              repr(replace(PointR(1, 2), tags=("t",))), PointD, PointR)
    with pytest.raises(TypeError) as from_d:
        dataclasses.replace(PointD(1), z=1)  # type: ignore[call-arg]
    with pytest.raises(TypeError) as from_r:
        replace(PointR(1), z=1)
    same_text(str(from_d.value), str(from_r.value), PointD, PointR)


def test_asdict_turns_nested_records_into_dicts_as_dataclasses() -> None:
    d = NestD(PointD(1, 2, ("a",)), (BagD("b", [3]),), {"k": [PointD(4)]})
    r = NestR(PointR(1, 2, ("a",)), (BagR("b", [3]),), {"k": [PointR(4)]})
    assert dataclasses.asdict(d) == asdict(r)


def test_pickle_and_copy_round_trip() -> None:
    p = PointR(1, 2, ("a",))
    assert pickle.loads(pickle.dumps(p)) == p and copy.copy(p) == p and copy.deepcopy(p) == p


def test_post_init_runs_after_the_fields_are_set() -> None:
    class Checked(Record):
        low: int
        high: int = 10

        def __post_init__(self) -> None:
            if self.low > self.high:
                raise ValueError(f"low {self.low} > high {self.high}")
            object.__setattr__(self, "high", self.high * 1)

    assert Checked(3).high == 10
    with pytest.raises(ValueError, match="low 11 > high 10"):
        Checked(11)


def test_mutable_records_assign_and_are_unhashable_as_plain_dataclasses() -> None:
    @dataclasses.dataclass
    class MutableD:
        n: int
        seen: list[int] = dataclasses.field(default_factory=list)

    class MutableR(Record, frozen=False):
        n: int
        seen: list[int] = field(default_factory=list)

    a, b = MutableD(1), MutableR(1)
    a.n, b.n = 2, 2
    assert (a.n, b.n) == (2, 2) and b == MutableR(2)
    assert MutableD.__hash__ is None and MutableR.__hash__ is None


def test_eq_false_keeps_identity_equality() -> None:
    class Opaque(Record, eq=False):
        data: list[int]

    one = Opaque([1])
    assert one == one and one != Opaque([1]) and len({one, Opaque([1])}) == 2


def test_init_false_keeps_the_class_own_init_and_subclasses_extend_fields() -> None:
    class Sized(Record, init=False):
        n: int
        n_kv: int

        def __init__(self, n: int, n_kv: int | None = None) -> None:
            object.__setattr__(self, "n", n)
            object.__setattr__(self, "n_kv", n if n_kv is None else n_kv)

    class Base(Record):
        a: int

    class Child(Base):
        b: str = "x"

    class Recording(Sized):  # a subclass with no fields of its own keeps the parent's __init__
        __slots__ = ()

    assert Sized(4) == Sized(4, 4) and repr(Sized(4, 2)).endswith("Sized(n=4, n_kv=2)")
    assert Recording(4).n_kv == 4
    assert field_names(Child) == ("a", "b") and Child(1).b == "x" and Child(1) != Base(1)
    assert replace(Sized(4), n_kv=1).n_kv == 1


def test_a_field_without_default_after_one_with_is_refused_as_dataclasses() -> None:
    follows = "non-default argument 'b' follows default argument"
    with pytest.raises(TypeError, match=follows):
        @dataclasses.dataclass(frozen=True)
        class BadD:
            a: int = 0
            b: int  # type: ignore[misc]
    with pytest.raises(TypeError, match=follows):
        class BadR(Record):
            a: int = 0
            b: int  # type: ignore[misc]
