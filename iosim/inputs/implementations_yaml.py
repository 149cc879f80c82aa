"""Implementation profiles from YAML: the shipped ones (configs/impls/*.yaml, by name) or a user's
file (by path), loaded strictly into an `Implementation` (implementations.py).

Every trait carries a `source`; unknown keys, missing keys and wrong types are refused with the
file and key named (ConfigError). The file format is described in implementations.py.
"""

from __future__ import annotations

import os
from functools import cache
from typing import TYPE_CHECKING, Any

from iosim.errors import ConfigError, IosimError, arg
from iosim.inputs.api_values import check_path_text
from iosim.inputs.excerpts import excerpt
from iosim.inputs.impl_features import FEATURES, Feature
from iosim.inputs.implementations import (
    EXTRA_KERNEL_WHEN,
    EXTRA_KERNELS,
    SPILL_INSTANCES,
    ExtraKernel,
    Implementation,
    SharedMemory,
    SpillRow,
    SplitRule,
    TileRow,
    Trait,
)
from iosim.inputs.limits import (
    MAX_BLOCK,
    MAX_HEAD_DIM,
    MAX_REGISTERS_PER_THREAD,
    MAX_SHARED_TILES,
    MAX_SPILL_BYTES,
    MAX_SRAM_BYTES,
    MAX_STAGES,
    MAX_WARPS,
)
from iosim.inputs.safe_yaml import refuse_unknown_keys, yaml_text
from iosim.inputs.shipped import shipped_dir, shipped_folder, shipped_yaml_files, yaml_stem

if TYPE_CHECKING:
    from pathlib import Path

SCHEMA_VERSION = 1


ALGORITHMS = ("standard", "flash2", "splitkv")


SPLIT_RULES = ("none", "fa2-heuristic", "stream-k")
"""When the forward splits the KV sequence: never; FlashAttention-2's num_splits_heuristic
(analysis/impl_kernels.py impl_algorithm); cuDNN's lean decode, a stream-K split that fills the
SMs (analysis/stream_k.py)."""


RUNS = ("iosim-triton", "sdpa", "flex", "eager")


FORWARD_WALKS = ("ascending", "descending")
"""The order a fused forward program walks its key blocks in (the YAML's forward_walk)."""


_TOP = {"schema_version", "name", "title", "runs", "algorithm", "dtypes", "head_dim",
        "forward_tiles", "backward_tiles", "shared_memory", "backward_shared_memory",
        "launch_order", "split_kv", "backward", "gqa", "extra_kernels", "notes", "persistent",
        "features", "spills", "forward_walk"}


_REQUIRED = {"schema_version", "name", "title", "runs", "algorithm", "dtypes", "head_dim",
             "launch_order", "split_kv", "backward", "gqa"}


_ROW_MATCH = {"d_max", "causal", "dtype", "cc", "smem_per_block_min", "smem_per_sm_below"}


_ROW_VALUES = {"block_q", "block_kv", "warps", "stages", "shared_bytes", "registers_per_thread",
               "source"}


_ROW_BOUNDS = {
    "d_max": (1, MAX_HEAD_DIM), "block_q": (1, MAX_BLOCK), "block_kv": (1, MAX_BLOCK),
    "warps": (1, MAX_WARPS), "stages": (1, MAX_STAGES),
    "registers_per_thread": (1, MAX_REGISTERS_PER_THREAD),
    "shared_bytes": (1, MAX_SRAM_BYTES), "smem_per_block_min": (0, MAX_SRAM_BYTES),
    "smem_per_sm_below": (0, MAX_SRAM_BYTES),
}
"""The whole-number range of every integer of a tile row (inputs/limits.py gives each bound's
reason): beyond them a number is physically impossible (1,025 threads in a block, 256
registers per thread) or leaves the int64 the sweeps carry it in."""

_TILE_COUNTS = (0, MAX_SHARED_TILES)
"""shared_memory's q_tiles, kv_tiles and score_tiles."""

_IMPLS = ("impls", "implementation profiles")
"""The shipped profiles' folder and what its files are called in an error (shipped.py)."""


def impls_dir() -> Path:
    """configs/impls, where the shipped implementation profiles are."""
    return shipped_dir(*_IMPLS)


def shipped_implementations() -> tuple[str, ...]:
    """The names of the shipped profiles (configs/impls/*.yaml), sorted."""
    return tuple(yaml_stem(p) for p in shipped_yaml_files(*_IMPLS))


def get_implementation(name_or_path: str | os.PathLike[str]) -> Implementation:
    """A shipped implementation by name, or the YAML file at a path (a str or pathlib.Path)."""
    name_or_path = check_path_text("impl", name_or_path)
    if name_or_path in shipped_implementations() and not os.path.exists(name_or_path):
        # a shipped name as it is written, and no file of that name here: what pathlib would
        # decide below (no suffix, no such path), without importing it (start-up time)
        return _load(os.path.join(shipped_folder(*_IMPLS), f"{name_or_path}.yaml"))
    from pathlib import Path

    path = Path(name_or_path)
    if path.suffix in (".yaml", ".yml") or path.exists():
        if not path.is_file():
            what = ("is a folder, not a file" if path.is_dir() else "is not a regular file "
                    "(a FIFO, device or socket)" if path.exists() else "no such file")
            raise IosimError(f"{arg('impl', name_or_path)}: {what}; give a shipped name "
                             f"({', '.join(shipped_implementations())}) or a YAML path",
                             param="impl")
        return _read(str(path.resolve()))  # read afresh: the user may have edited it since
    name = name_or_path.strip().lower()
    if name not in shipped_implementations():
        from iosim.inputs.suggest import did_you_mean  # difflib: imported only for a mistake

        raise IosimError(f"unknown implementation '{name_or_path}'."
                         f"{did_you_mean(name, shipped_implementations())} Use one of "
                         f"{', '.join(shipped_implementations())}, or the path of your own YAML "
                         f"(configs/impls/README.md)")
    return _load(os.path.join(shipped_folder(*_IMPLS), f"{name}.yaml"))


def _read(path: str) -> Implementation:
    """The profile in the YAML file at `path`, parsed and checked."""
    from iosim.inputs.safe_yaml import read_yaml  # the one bounded, strict YAML reader, as
    # for the GPU files

    data = read_yaml(path)
    if not isinstance(data, dict):
        raise ConfigError(path, None, "expected a mapping of keys at the top level")
    return parse_implementation(data, path)


@cache
def _load(path: str) -> Implementation:
    """A shipped profile, read once per process (an install does not change while it runs); a
    user's own file is read by `_read` every time, as the GPU and model files are: cached by
    path, an edit to it between two compare() calls in one session was never seen."""
    return _read(path)


def _need(data: dict[str, Any], key: str, kind: type | tuple[type, ...], path: str,
          where: str = "") -> Any:
    full = f"{where}{key}"
    if key not in data:
        raise ConfigError(path, full, "missing")
    value = data[key]
    if (isinstance(value, bool) and kind is not bool) or not isinstance(value, kind):
        names = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
        raise ConfigError(path, full, f"must be {names}, got {excerpt(value)}")
    if isinstance(value, int) and not isinstance(value, bool) and value < 0:
        raise ConfigError(path, full, f"must not be negative, got {value}")
    return value


def _optional_list(data: dict[str, Any], key: str, path: str, shape: str) -> list[Any]:
    """data[key], a list (absent: an empty one). `or []` took 0, '', {} and null for none and
    iterated 5 or 1.5 into a TypeError; `shape` says what an entry holds."""
    if key not in data:
        return []
    value = data[key]
    if not isinstance(value, list):
        raise ConfigError(path, key, f"must be a list of {shape} ([] for none), got "
                          f"{excerpt(value)}")
    return value


def _text(data: dict[str, Any], key: str, path: str) -> str:
    """A name or title: a str with something in it (an empty one printed as a blank column)."""
    return yaml_text(path, key, _need(data, key, str, path))


def _bounded(data: dict[str, Any], key: str, path: str, where: str, low: int, high: int) -> int:
    """data[key], a whole number in [low, high] (not a bool, float or string of digits)."""
    value = data.get(key)
    if key not in data:
        raise ConfigError(path, where + key, "missing")
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ConfigError(path, where + key, f"must be a whole number from {low:,} to "
                          f"{high:,}, got {excerpt(value)}")
    return value


def _mapping(value: Any, path: str, key: str, allowed: set[str]) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ConfigError(path, key, f"must be a mapping, got {type(value).__name__}")
    refuse_unknown_keys(path, key, value, allowed)
    return value


BACKWARD_ALGORITHMS = ("triton",)
"""Loop nests a profile's backward may run in place of its `algorithm`'s (`backward.algorithm`):
iosim's own Triton backward (algorithms/triton_bwd.py, calibrate/kernels_bwd.py)."""


def _backward(data: dict[str, Any], path: str) -> tuple[Trait, str, tuple[int, ...]]:
    """`backward`: the trait in words, and optionally the loop nest it runs (`algorithm`) and
    the head dims that runs (`head_dims`)."""
    m = _mapping(_need(data, "backward", dict, path), path, "backward",
                 {"value", "source", "algorithm", "head_dims"})
    trait = Trait(_need(m, "value", str, path, "backward."),
                  _need(m, "source", str, path, "backward."))
    algorithm = m.get("algorithm", "")
    if algorithm and algorithm not in BACKWARD_ALGORITHMS:
        raise ConfigError(path, "backward.algorithm",
                          f"must be one of {', '.join(BACKWARD_ALGORITHMS)}, got {excerpt(algorithm)}")
    dims = m.get("head_dims", [])
    if not isinstance(dims, list) or not all(
            isinstance(x, int) and not isinstance(x, bool) and 1 <= x <= MAX_HEAD_DIM for x in dims):
        raise ConfigError(path, "backward.head_dims",
                          f"must be a list of head dims 1-{MAX_HEAD_DIM}, got {excerpt(dims)}")
    if dims and not algorithm:
        raise ConfigError(path, "backward.head_dims", "needs backward.algorithm (the loop nest "
                          "whose head dims they are)")
    return trait, str(algorithm), tuple(dims)


def _trait(data: dict[str, Any], key: str, path: str) -> Trait:
    m = _mapping(_need(data, key, dict, path), path, key, {"value", "source"})
    return Trait(_need(m, "value", str, path, f"{key}."), _need(m, "source", str, path, f"{key}."))


def _rows(value: Any, path: str, key: str) -> tuple[TileRow, ...]:
    if not isinstance(value, list) or not value:
        raise ConfigError(path, key, "must be a non-empty list of tile rows")
    rows = []
    for i, raw in enumerate(value):
        where = f"{key}[{i}]"
        m = _mapping(raw, path, where, _ROW_MATCH | _ROW_VALUES)
        w = where + "."
        for size in ("d_max", "block_q", "block_kv", "warps"):
            _bounded(m, size, path, w, *_ROW_BOUNDS[size])
        cc = m.get("cc", [])
        if not isinstance(cc, list) or not all(isinstance(c, str) and c.isdigit() for c in cc):
            raise ConfigError(path, w + "cc", 'must be a list of compute capabilities like "86"')
        dtypes = m.get("dtype", [])
        if not isinstance(dtypes, list) or not all(t in ("fp16", "bf16", "fp32") for t in dtypes):
            raise ConfigError(path, w + "dtype", "must be a list of fp16, bf16, fp32")
        causal = m.get("causal")
        if causal is not None and not isinstance(causal, bool):
            raise ConfigError(path, w + "causal", f"must be true or false, got {excerpt(causal)}")
        optional = {k: _bounded(m, k, path, w, *_ROW_BOUNDS[k]) for k in
                    ("smem_per_block_min", "smem_per_sm_below", "stages", "shared_bytes",
                     "registers_per_thread") if k in m}
        rows.append(TileRow(m["d_max"], m["block_q"], m["block_kv"], m["warps"],
                            _need(m, "source", str, path, w), causal, tuple(dtypes), tuple(cc),
                            **optional))
    return tuple(rows)


def _spills(data: dict[str, Any], path: str) -> tuple[SpillRow, ...]:
    """The `spills` list (absent: none declared)."""
    raw = _optional_list(data, "spills", path, "{d_max, l2_store_bytes_per_block, "
                         "dram_write_bytes_per_program, by_instance?, source}")
    rows: list[SpillRow] = []
    for i, item in enumerate(raw):
        where = f"spills[{i}]"
        m = _mapping(item, path, where, {"d_max", "l2_store_bytes_per_block",
                                         "dram_write_bytes_per_program", "by_instance",
                                         "source"})
        w = where + "."
        d_max = _bounded(m, "d_max", path, w, 1, MAX_HEAD_DIM)
        if rows and d_max <= rows[-1].d_max:  # spill_for takes the first row covering d
            raise ConfigError(path, w + "d_max", f"{d_max} is not above spills[{i - 1}]'s "
                              f"{rows[-1].d_max}, so the row would never be used (a head dim "
                              f"takes the first row whose d_max covers it); list the rows by "
                              f"increasing d_max, one row per range")
        rows.append(SpillRow(
            d_max,
            _bounded(m, "l2_store_bytes_per_block", path, w, 0, MAX_SPILL_BYTES),
            _bounded(m, "dram_write_bytes_per_program", path, w, 0, MAX_SPILL_BYTES),
            _need(m, "source", str, path, w), _by_instance(m, path, w)))
    return tuple(rows)


def _by_instance(m: dict[str, Any], path: str, w: str) -> tuple[tuple[str, int], ...]:
    """A spill row's optional `by_instance` mapping (template instance: bytes per program)."""
    if "by_instance" not in m:
        return ()
    table = _mapping(m["by_instance"], path, w + "by_instance", set(SPILL_INSTANCES))
    return tuple((k, _bounded(table, k, path, w + "by_instance.", 0, MAX_SPILL_BYTES))
                 for k in SPILL_INSTANCES if k in table)


def _shared(data: dict[str, Any], key: str, path: str) -> SharedMemory | None:
    if key not in data:
        return None
    m = _mapping(data[key], path, key, {"q_tiles", "kv_tiles", "score_tiles", "source"})
    where = key + "."
    return SharedMemory(_bounded(m, "q_tiles", path, where, *_TILE_COUNTS),
                        _bounded(m, "kv_tiles", path, where, *_TILE_COUNTS),
                        _need(m, "source", str, path, where),
                        _bounded(m, "score_tiles", path, where, *_TILE_COUNTS)
                        if "score_tiles" in m else 0)


def _features(data: dict[str, Any], path: str) -> tuple[Feature, ...] | None:
    """The `features` list (None when the key is absent: nothing declared, nothing refused)."""
    if "features" not in data:
        return None
    raw = data["features"]
    if not isinstance(raw, list):
        raise ConfigError(path, "features", "must be a list of {name, source} mappings "
                          "(an empty list: the implementation runs none of them)")
    features: list[Feature] = []
    for i, item in enumerate(raw):
        where = f"features[{i}]"
        m = _mapping(item, path, where, {"name", "source", "forward_only"})
        name = _need(m, "name", str, path, where + ".")
        if name not in FEATURES:
            raise ConfigError(path, where + ".name", f"must be one of {', '.join(FEATURES)}, "
                              f"got {excerpt(name)}")
        if any(f.name == name for f in features):
            raise ConfigError(path, where + ".name", f"{name} is listed twice")
        forward_only = m.get("forward_only", False)
        if not isinstance(forward_only, bool):
            raise ConfigError(path, where + ".forward_only",
                              f"must be true or false, got {excerpt(forward_only)}")
        features.append(Feature(name, _need(m, "source", str, path, where + "."), forward_only))
    return tuple(features)


def parse_implementation(data: dict[str, Any], path: str) -> Implementation:
    """An Implementation from a YAML mapping, strictly (ConfigError naming file and key)."""
    if "calibration" in data:
        # an implementation is not a GPU: what it reaches on one lives in that GPU's YAML
        raise ConfigError(path, "calibration", "per-GPU fitted figures belong in the GPU's YAML "
                          "(measured.impls.NAME, written by `iosim calibrate --gpu GPU --impl "
                          "NAME`); move them there and delete this block")
    refuse_unknown_keys(path, None, data, _TOP)
    for key in sorted(_REQUIRED):
        if key not in data:
            raise ConfigError(path, key, "missing")
    if data["schema_version"] != SCHEMA_VERSION or isinstance(data["schema_version"], bool):
        raise ConfigError(path, "schema_version", f"must be {SCHEMA_VERSION}")
    name = _text(data, "name", path)
    runs = _need(data, "runs", str, path)
    if runs not in RUNS:
        raise ConfigError(path, "runs", f"must be one of {', '.join(RUNS)}, got {excerpt(runs)}")
    algorithm = _need(data, "algorithm", str, path)
    if algorithm not in ALGORITHMS:
        raise ConfigError(path, "algorithm", f"must be one of {', '.join(ALGORITHMS)}")
    dtypes = _need(data, "dtypes", list, path)
    if not dtypes or not all(t in ("fp16", "bf16", "fp32") for t in dtypes):
        raise ConfigError(path, "dtypes", "must list some of fp16, bf16, fp32")
    hd = _mapping(_need(data, "head_dim", dict, path), path, "head_dim",
                  {"max", "multiple_of", "source", "v_same_source"})
    tiled = algorithm != "standard"
    forward = _rows(data.get("forward_tiles"), path, "forward_tiles") if tiled else ()
    backward = (_rows(data["backward_tiles"], path, "backward_tiles")
                if "backward_tiles" in data else ())
    shared = _shared(data, "shared_memory", path)
    bwd_shared = _shared(data, "backward_shared_memory", path) or shared
    if tiled and shared is None and any(not r.shared_bytes for r in forward):
        raise ConfigError(path, "shared_memory", "missing: a tile row without shared_bytes "
                          "needs the shared-memory rule")
    split = _mapping(_need(data, "split_kv", dict, path), path, "split_kv",
                     {"rule", "source", "tiles"})
    rule = _need(split, "rule", str, path, "split_kv.")
    if rule not in SPLIT_RULES:
        raise ConfigError(path, "split_kv.rule", f"must be one of {', '.join(SPLIT_RULES)}")
    split_tiles = _rows(split["tiles"], path, "split_kv.tiles") if "tiles" in split else ()
    if rule != "none" and not split_tiles:
        raise ConfigError(path, "split_kv.tiles", f"missing: rule {rule} needs the split "
                          f"kernel's tiles")
    extras = []
    for i, raw in enumerate(_optional_list(data, "extra_kernels", path,
                                           "{kind, when, source}")):
        where = f"extra_kernels[{i}]"
        m = _mapping(raw, path, where, {"kind", "when", "source"})
        kind = _need(m, "kind", str, path, where + ".")
        when = _need(m, "when", str, path, where + ".")
        if kind not in EXTRA_KERNELS:
            raise ConfigError(path, where + ".kind", f"must be one of {', '.join(EXTRA_KERNELS)}")
        if when not in EXTRA_KERNEL_WHEN:
            raise ConfigError(path, where + ".when", f"must be one of {', '.join(EXTRA_KERNEL_WHEN)}")
        extras.append(ExtraKernel(kind, when, _need(m, "source", str, path, where + ".")))
    forward_walk = _trait(data, "forward_walk", path) if "forward_walk" in data else None
    if forward_walk is not None and forward_walk.value not in FORWARD_WALKS:
        raise ConfigError(path, "forward_walk.value",
                          f"must be one of {', '.join(repr(w) for w in FORWARD_WALKS)}")
    persistent = _trait(data, "persistent", path) if "persistent" in data else None
    if persistent is not None and persistent.value not in ("true", "false"):
        raise ConfigError(path, "persistent.value", 'must be "true" or "false"')
    if persistent is not None and persistent.value == "false":
        persistent = None
    backward_trait, backward_algorithm, backward_head_dims = _backward(data, path)
    return Implementation(
        persistent=persistent, backward_algorithm=backward_algorithm,
        backward_head_dims=backward_head_dims, forward_walk=forward_walk,
        name=name, title=_text(data, "title", path), runs=runs, algorithm=algorithm,
        dtypes=tuple(dtypes), head_dim_max=_bounded(hd, "max", path, "head_dim.", 1, MAX_HEAD_DIM),
        head_dim_multiple=(_bounded(hd, "multiple_of", path, "head_dim.", 1, MAX_HEAD_DIM)
                           if "multiple_of" in hd else 1),
        head_dim_source=_need(hd, "source", str, path, "head_dim."),
        head_dim_v_same=(_need(hd, "v_same_source", str, path, "head_dim.")
                         if "v_same_source" in hd else ""),
        forward_tiles=forward, backward_tiles=backward, shared_memory=shared,
        backward_shared_memory=bwd_shared,
        launch_order=_trait(data, "launch_order", path),
        split_kv=SplitRule(rule, _need(split, "source", str, path, "split_kv."), split_tiles),
        backward=backward_trait, gqa=_trait(data, "gqa", path),
        extra_kernels=tuple(extras), path=path, notes=str(data.get("notes", "")),
        features=_features(data, path), spills=_spills(data, path))
