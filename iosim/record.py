"""Record: iosim's value types (frozen dataclasses, without the code they generate).

A record is declared as a dataclass is, by its annotated fields, and behaves as a frozen,
slotted dataclass does: `__init__` with the fields in order (defaults, `field(default_factory=)`,
`__post_init__`), `__eq__` and `__hash__` over the compared fields, `__repr__` over the shown
ones, `FrozenInstanceError` on assignment, `__match_args__`, no `__dict__`. `replace`, `fields`
and `asdict` mirror `dataclasses`'.

    class Term(Record):
        kernel: str
        elements: int
        init: bool = False

    class Report(Record, frozen=False):   # mutable, unhashable (a dataclass without frozen)
        ...

`eq=False` keeps identity equality and hashing; `init=False` keeps the class's own `__init__`
(which sets the fields with `object.__setattr__`).

Why not `dataclasses`: Python 3.11 `exec`s every method it generates, 1.0–1.5 ms per frozen
class, and `iosim compare` creates dozens (half of what iosim's modules cost it at start-up).
Here every method is written once (on `Record`; `__init__` in `_init_for`, one closure per
class over its slots) and reads the per-class field table that the metaclass builds; creating a
record class costs what creating any class costs (≈ 0.1 ms). The type checker
reads the classes as dataclasses (`dataclass_transform`), so `mypy --strict` checks every
constructor call's names and types and every assignment as it did.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable
from itertools import repeat
from operator import attrgetter, itemgetter
from types import MemberDescriptorType
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar, overload

if TYPE_CHECKING:
    from typing_extensions import dataclass_transform
else:
    def dataclass_transform(**_: object) -> Callable[[type], type]:
        """At run time only the type checker's marker (typing has it from Python 3.11)."""
        return lambda cls: cls

T = TypeVar("T")
R = TypeVar("R", bound="Record")

_MISSING: Any = object()
_set = object.__setattr__
_put = MemberDescriptorType.__set__
"""Sets one slot of an instance, past the class's frozen `__setattr__` (as `object.__setattr__`,
without looking the name up)."""
_consume: Callable[[Iterable[Any]], None] = deque(maxlen=0).extend
"""Runs an iterator to its end in C (itertools' `consume` recipe): `__init__` maps `_put` over
the fields with it, as fast as a generated `__init__`'s one call per field."""


class Field:
    """One field of a record: its name, annotation (as written), default and flags."""

    __slots__ = ("compare", "default", "default_factory", "name", "repr", "type")

    def __init__(self, default: Any = _MISSING, default_factory: Any = _MISSING,
                 repr: bool = True, compare: bool = True) -> None:
        self.name = ""
        self.type: object = None
        self.default = default
        self.default_factory = default_factory
        self.repr = repr
        self.compare = compare

    def __repr__(self) -> str:
        return f"Field(name={self.name!r}, type={self.type!r})"


@overload
def field(*, default_factory: Callable[[], T], repr: bool = True, compare: bool = True) -> T:
    """A field whose default is made per instance by `default_factory()`."""
@overload
def field(*, default: T, repr: bool = True, compare: bool = True) -> T:
    """A field with a default, shown or compared as the flags say."""
def field(*, default: Any = _MISSING, default_factory: Any = _MISSING, repr: bool = True,
          compare: bool = True) -> Any:
    """A field's default (or a factory called per instance), and whether `repr` shows it and
    `==`/`hash` compare it, as `dataclasses.field`."""
    if default is not _MISSING and default_factory is not _MISSING:
        raise ValueError("cannot specify both default and default_factory")
    return Field(default, default_factory, repr, compare)


def _own_annotations(namespace: dict[str, Any]) -> dict[str, Any]:
    annotations = namespace.get("__annotations__")
    if annotations is None and "__annotate__" in namespace:  # Python 3.14, no __future__ import
        import annotationlib  # type: ignore[import-not-found,unused-ignore]
        annotations = annotationlib.call_annotate_function(
            namespace["__annotate__"], annotationlib.Format.FORWARDREF)
    return {name: kind for name, kind in (annotations or {}).items()
            if not str(kind).startswith(("ClassVar", "typing.ClassVar"))}


def _tuple_of(names: tuple[str, ...], get: Callable[..., Any]) -> Callable[[Any], tuple[Any, ...]]:
    """`get(*names)` (attrgetter or itemgetter, in C), always returning a tuple."""
    if len(names) >= 2:
        return get(*names)  # type: ignore[no-any-return]
    if names:
        one = get(names[0])
        return lambda obj: (one(obj),)
    return lambda obj: ()


class _Layout:
    """What a call that is not all-positional needs: the fields, their defaults, and how to
    put a dict of values in field order."""

    __slots__ = ("current", "defaults", "factories", "index", "ordered", "table", "tail")

    def __init__(self, table: dict[str, Field]) -> None:
        names = tuple(table)
        self.table = table
        self.index = {name: i for i, name in enumerate(names)}
        self.defaults = {n: s.default for n, s in table.items() if s.default is not _MISSING}
        self.factories = tuple((n, s.default_factory) for n, s in table.items()
                               if s.default_factory is not _MISSING)
        self.tail = None if self.factories else tuple(self.defaults.values())
        """The defaults of the trailing fields, when none has a factory."""
        self.ordered = _tuple_of(names, itemgetter)
        self.current = _tuple_of(names, attrgetter)

    def values(self, cls: type, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, ...]:
        """Every field's value in field order, from a call's arguments and the defaults; the
        dict operations run in C, then one check that every field is named once."""
        count = len(self.index)
        if not kwargs and self.tail is not None and count - len(self.tail) <= len(args) < count:
            return args + self.tail[len(args) - count:]  # positional, the rest defaulted
        given = kwargs
        if args:
            given = dict(zip(self.index, args, strict=False))
            given.update(kwargs)
            if len(given) != len(args) + len(kwargs) or len(args) > count:
                raise self.call_error(cls, args, kwargs)
        values = {**self.defaults, **given}
        for name, make in self.factories:
            if name not in given:
                values[name] = make()
        if values.keys() != self.index.keys():
            raise self.call_error(cls, args, kwargs)
        return self.ordered(values)

    def call_error(self, cls: type, args: tuple[Any, ...], kwargs: dict[str, Any]) -> TypeError:
        """The TypeError Python raises for a call that does not fit the fields' signature (too
        many positional arguments, an unknown or repeated keyword, a missing field)."""
        names, index, table = tuple(self.index), self.index, self.table
        call = f"{cls.__qualname__}.__init__()"
        if len(args) > len(names):
            required = len(names) - len(self.defaults) - len(self.factories)
            takes = (f"{len(names) + 1}" if required == len(names)
                     else f"from {required + 1} to {len(names) + 1}")
            return TypeError(f"{call} takes {takes} positional arguments but {len(args) + 1} "
                             "were given")
        for key in kwargs:
            if key not in index:
                return TypeError(f"{call} got an unexpected keyword argument {key!r}")
            if index[key] < len(args):
                return TypeError(f"{call} got multiple values for argument {key!r}")
        missing = [repr(name) for name in names[len(args):] if name not in kwargs
                   and table[name].default is _MISSING and table[name].default_factory is _MISSING]
        listed = (missing[0] if len(missing) == 1 else " and ".join(missing) if len(missing) == 2
                  else ", ".join(missing[:-1]) + ", and " + missing[-1])
        plural = "argument" if len(missing) == 1 else "arguments"
        return TypeError(f"{call} missing {len(missing)} required positional {plural}: {listed}")


@dataclass_transform(frozen_default=True, field_specifiers=(field, Field))
class RecordMeta(type):
    """Builds each record class's field table (and its `__slots__`) when the class is made."""

    __record_names__: tuple[str, ...]
    __record_slots__: tuple[Any, ...]
    __record_layout__: _Layout
    __record_key__: Callable[[Any], tuple[Any, ...]]
    __record_repr__: tuple[str, ...]
    __record_post_init__: bool

    def __new__(mcs, name: str, bases: tuple[type, ...], namespace: dict[str, Any], *,
                frozen: bool = True, eq: bool = True, init: bool = True) -> RecordMeta:
        inherited: dict[str, Field] = {}
        for base in reversed(bases):
            layout = getattr(base, "__record_layout__", None)
            inherited.update(layout.table if layout else {})
        own: dict[str, Field] = {}
        for field_name, kind in _own_annotations(namespace).items():
            value = namespace.pop(field_name, _MISSING)
            spec = value if isinstance(value, Field) else Field(default=value)
            spec.name, spec.type = field_name, kind
            own[field_name] = spec
        namespace.setdefault("__slots__", tuple(n for n in own if n not in inherited))
        table = {**inherited, **own}
        seen_default = ""
        for spec in table.values():
            if spec.default is not _MISSING or spec.default_factory is not _MISSING:
                seen_default = spec.name
            elif seen_default:
                raise TypeError(f"non-default argument {spec.name!r} follows default argument")
        cls = super().__new__(mcs, name, bases, namespace)
        names = tuple(table)
        cls.__record_names__ = names
        cls.__record_slots__ = tuple(getattr(cls, n) for n in names)
        """Each field's slot (member descriptor): `__init__` sets it directly."""
        cls.__record_layout__ = _Layout(table)
        cls.__record_key__ = _tuple_of(tuple(n for n, s in table.items() if s.compare), attrgetter)
        cls.__record_repr__ = tuple(n for n, s in table.items() if s.repr)
        cls.__record_post_init__ = hasattr(cls, "__post_init__")
        if init and own and "__init__" not in namespace:  # (else the parent's serves)
            type.__setattr__(cls, "__init__", _init_for(cls))
        if own or "__match_args__" not in namespace:
            type.__setattr__(cls, "__match_args__", names)
        if not frozen:
            cls.__setattr__ = object.__setattr__  # type: ignore[assignment]
            cls.__delattr__ = object.__delattr__  # type: ignore[assignment]
        if not eq:
            cls.__eq__ = object.__eq__  # type: ignore[assignment]
            cls.__hash__ = object.__hash__  # type: ignore[assignment]
        elif not frozen:
            cls.__hash__ = None  # type: ignore[assignment]
        return cls


def _init_for(cls: RecordMeta) -> Callable[..., None]:
    """The class's `__init__`: `Record.__init__`'s steps over the class's own slots, layout and
    `__post_init__` flag held in a closure (no attribute lookups per call, and no code compiled:
    the one function body below serves every record class)."""
    slots, layout, post_init = cls.__record_slots__, cls.__record_layout__, cls.__record_post_init__
    count, defaults, keys = len(slots), layout.defaults, layout.index.keys()

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        if kwargs and not args and not layout.factories:  # by keyword: dict operations in C
            values = {**defaults, **kwargs} if defaults else kwargs
            if values.keys() != keys:
                raise layout.call_error(self.__class__, args, kwargs)
            _consume(map(_set, repeat(self), values, values.values()))
        else:
            if kwargs or len(args) != count:
                args = layout.values(self.__class__, args, kwargs)
            _consume(map(_put, slots, repeat(self), args))
        if post_init:
            self.__post_init__()

    __init__.__qualname__ = f"{cls.__qualname__}.__init__"
    return __init__


class Record(metaclass=RecordMeta):
    """Base of every iosim value type: see the module's docstring."""

    __slots__ = ()
    __record_names__: ClassVar[tuple[str, ...]]
    __record_slots__: ClassVar[tuple[Any, ...]]
    __record_layout__: ClassVar[_Layout]
    __record_key__: ClassVar[Callable[[Any], tuple[Any, ...]]]
    __record_repr__: ClassVar[tuple[str, ...]]
    __record_post_init__: ClassVar[bool]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        """Every record class gets its own (`_init_for`); this one only types the base."""
        _init_for(self.__class__)(self, *args, **kwargs)

    def __eq__(self, other: object) -> bool:
        if other.__class__ is self.__class__:
            key = self.__class__.__record_key__
            return key(self) == key(other)
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self.__class__.__record_key__(self))

    def __repr__(self) -> str:
        shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.__record_repr__)
        return f"{self.__class__.__qualname__}({shown})"

    def __setattr__(self, name: str, value: Any) -> None:
        from dataclasses import FrozenInstanceError
        raise FrozenInstanceError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        from dataclasses import FrozenInstanceError
        raise FrozenInstanceError(f"cannot delete field {name!r}")

    def __getstate__(self) -> list[Any]:
        """The fields' values, for pickle and copy (a slotted, frozen class has no __dict__)."""
        return [getattr(self, name) for name in self.__record_names__]

    def __setstate__(self, state: list[Any]) -> None:
        _consume(map(_put, self.__record_slots__, repeat(self), state))


def replace(record: R, /, **changes: Any) -> R:
    """A copy of `record` with `changes` (field name → value), built through its `__init__`
    (so validated again), as `dataclasses.replace`."""
    values = dict(zip(record.__record_names__, record.__record_layout__.current(record),
                      strict=True))
    values.update(changes)
    return record.__class__(**values)


def fields(record: Record | type[Record]) -> tuple[Field, ...]:
    """The fields of a record class or instance, in order (`.name`, `.type` as written)."""
    return tuple(record.__record_layout__.table.values())


def field_names(record: Record | type[Record]) -> tuple[str, ...]:
    """The names of a record's fields, in order."""
    return record.__record_names__


def asdict(record: Record) -> dict[str, Any]:
    """The record as a dict of its fields, records inside it (also in lists, tuples and dict
    values) turned into dicts too, as `dataclasses.asdict`."""
    return {name: _plain(getattr(record, name)) for name in record.__record_names__}


def _plain(value: Any) -> Any:
    if isinstance(value, Record):
        return asdict(value)
    if isinstance(value, (list, tuple)):
        items = [_plain(v) for v in value]
        return type(value)(*items) if hasattr(value, "_fields") else type(value)(items)
    if isinstance(value, dict):
        return type(value)((_plain(k), _plain(v)) for k, v in value.items())
    return value
