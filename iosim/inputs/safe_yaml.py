"""Reading a hardware YAML safely: bounded in size and in what it can expand to or construct;
and the one check of the keys a YAML mapping may have (`refuse_unknown_keys`).

`read_yaml` returns the plain data of a file (mappings, lists, strings, numbers, booleans, null,
dates) or raises ConfigError with one line naming the file: larger than 1 MiB, not UTF-8, not
valid YAML, duplicate keys, keys that are lists or mappings, merge keys (<<), explicit tags,
anchors and aliases (so a "billion laughs" file is refused before anything is expanded), or
nesting deeper than MAX_YAML_DEPTH. Only safe_load's constructors are ever used.
"""

from __future__ import annotations

import os
from functools import cache
from typing import Any

from iosim.errors import ConfigError
from iosim.inputs.excerpts import clip, excerpt

MAX_YAML_BYTES = 1 << 20
"""A hardware file larger than 1 MiB is refused unread (the shipped ones are 2-4 KiB)."""

MAX_YAML_DEPTH = 16
"""Nesting deeper than this is refused before composing (the schema nests 4 deep)."""


# PyYAML is imported where a file is parsed, not with this module: a shipped file already
# parsed is read from yaml_cache.py without it (start-up time).


@cache
def _loaders() -> tuple[Any, Any]:
    """(the strict loader, its safe base): libyaml's CSafeLoader when present (~10× faster)."""
    import yaml

    safe_base: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

    class StrictLoader(safe_base):  # type: ignore[misc]
        """safe_load that also refuses duplicate keys (PyYAML silently keeps the last one)."""

    StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG,
                                 _construct_mapping_no_duplicates)
    return StrictLoader, safe_base


def _construct_mapping_no_duplicates(loader: Any, node: Any) -> Any:
    import yaml

    seen: set[Any] = set()
    for key_node, _ in node.value:
        if key_node.tag == "tag:yaml.org,2002:merge":
            raise yaml.constructor.ConstructorError(
                None, None, "merge keys (<<) are not allowed; write each key out", key_node.start_mark)
        if not isinstance(key_node, yaml.ScalarNode):
            kind = "list" if isinstance(key_node, yaml.SequenceNode) else "mapping"
            raise yaml.constructor.ConstructorError(
                None, None, f"a key is a {kind}; keys must be plain names", key_node.start_mark)
        key = loader.construct_object(key_node)
        if key in seen:
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key {key!r}", key_node.start_mark
            )
        seen.add(key)
    return loader.construct_mapping(node)


def read_yaml(path: str | os.PathLike[str]) -> Any:
    """The document of a hardware file: bounded in size, UTF-8, plain YAML (no tags, anchors,
    aliases or merge keys, so nothing expands), refused with one line naming the file. A file of
    the shipped folders is read through yaml_cache.py: parsed once, while it does not change."""
    where = os.fspath(path)
    from iosim.inputs.shipped import is_shipped_file

    if is_shipped_file(where):
        from iosim.inputs.yaml_cache import cached_read

        return cached_read(where, _parse_file, __file__)
    return _parse_file(where)


def _parse_file(where: str) -> Any:
    from iosim.inputs.input_files import FileTextError, read_text_capped

    try:
        text = read_text_capped(where, MAX_YAML_BYTES)
    except FileTextError as exc:
        hint = " (1 MiB); a GPU file is a few KiB of keys and figures" if exc.too_large else ""
        raise ConfigError(where, None, exc.problem + hint) from None
    import yaml

    strict, _ = _loaders()
    try:
        _refuse_expanding_yaml(where, text)
        data = yaml.load(text, Loader=strict)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f" at line {mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        if "constructor for the tag" in str(problem):
            problem = f"YAML tags are not allowed ({problem})"
        raise ConfigError(where, None, f"not valid YAML{line}: {excerpt(problem, 120)}") from None
    empty = _first_null(data, "")
    if empty is not None:
        raise ConfigError(where, clip(empty, 120), "is empty (null); give a value, or leave the "
                                                   "key out for its default")
    return data


def _first_null(data: Any, at: str) -> str | None:
    """The key path ("measured.impls.flex.call_overhead_s", "layers[0].window") of the first
    value below the top that is null (`key:` or `key: null`), or None. Every reader takes an
    absent key for its default, and a null read by `.get()` is the same None: a figure left
    empty, or `window: null` copied from a Hugging Face config, would silently be the default
    (no window, no call overhead) instead of what the user meant to write."""
    if isinstance(data, dict):
        for key, value in data.items():
            path = f"{at}.{key}" if at else str(key)
            found = path if value is None else _first_null(value, path)
            if found is not None:
                return found
    elif isinstance(data, list):
        for index, value in enumerate(data):
            path = f"{at}[{index}]"
            found = path if value is None else _first_null(value, path)
            if found is not None:
                return found
    return None


def _refuse_expanding_yaml(where: str, text: str) -> None:
    """Scan the event stream (linear in the file, nothing built) for what could expand or
    construct more than plain data: anchors and aliases (a few hundred bytes of "billion
    laughs" expand to gigabytes), explicit tags, and nesting deeper than MAX_YAML_DEPTH."""
    import yaml

    depth = 0
    for event in yaml.parse(text, Loader=_loaders()[1]):
        line = f" at line {event.start_mark.line + 1}" if event.start_mark else ""
        if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None):
            raise ConfigError(where, None, f"YAML anchors and aliases (&, *) are not "
                                           f"allowed{line}; write each value out")
        tag = getattr(event, "tag", None)
        if tag is not None:
            raise ConfigError(where, None, f"YAML tags are not allowed{line} (found "
                                           f"{excerpt(tag)}); write plain values")
        if isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
            depth += 1
            if depth > MAX_YAML_DEPTH:
                raise ConfigError(where, None, f"nested deeper than {MAX_YAML_DEPTH} "
                                               f"levels{line}; a GPU file nests 4 deep")
        elif isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
            depth -= 1


def yaml_kind(value: object) -> str:
    """A value's YAML kind, for messages: 'a list', 'a mapping', 'empty (null)', 'a date'."""
    import datetime

    if value is None:
        return "empty (null)"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, (datetime.date, datetime.datetime)):
        return f"a date ({value})"
    return excerpt(value)


def read_document(path: str, allowed: frozenset[str] | set[str] | tuple[str, ...], *,
                  schema_version: int) -> dict[Any, Any]:
    """The top-level mapping of a versioned iosim YAML (a GPU or model file), read by
    `read_yaml`: a mapping whose keys are `allowed` and whose schema_version is
    `schema_version` (the integer, not `true`); else one ConfigError naming the file."""
    raw = read_yaml(path)
    if not isinstance(raw, dict):
        raise ConfigError(path, None, f"expected a mapping of keys at the top level, the "
                                      f"document is {yaml_kind(raw)}")
    refuse_unknown_keys(path, None, raw, allowed)
    version = raw.get("schema_version")
    if isinstance(version, bool) or version != schema_version:
        got = excerpt(version) if "schema_version" in raw else "missing"
        raise ConfigError(path, "schema_version", f"must be {schema_version}, got {got}")
    return raw


def refuse_unknown_keys(path: str, key: str | None, raw: dict[Any, Any],
                        allowed: set[str] | frozenset[str] | tuple[str, ...]) -> None:
    """ConfigError naming the first (in sorted order) key of the mapping `raw` at `key` (None:
    the top level) that is not `allowed`, the allowed key it is closest to, and the allowed
    ones; nothing when all are. GPU, model and implementation files alike."""
    unknown = sorted(str(k) for k in raw if k not in allowed)
    if unknown:
        from iosim.inputs.suggest import did_you_mean  # difflib: for a mistake only

        where = clip(unknown[0]) if key is None else f"{key}.{clip(unknown[0])}"
        raise ConfigError(path, where, f"unknown key.{did_you_mean(unknown[0], allowed)} "
                                       f"Allowed: {', '.join(sorted(allowed))}")


def yaml_text(path: str, key: str, value: Any, *, lines: bool = False) -> str:
    """A text value of an iosim YAML (a name, title, display name, vendor, ...): a string with
    something in it and, unless `lines` (free notes), no control character; returned stripped.
    `display_name: ""` printed the GPU as a blank column, an alias `"  "` or `"a\\nb"` was a
    name no --gpu could ever give."""
    if not isinstance(value, str):
        raise ConfigError(path, key, f"must be text, got {yaml_kind(value)}")
    if not value.strip():
        raise ConfigError(path, key, f"is empty ({excerpt(value)}); give it text, or leave the "
                                     f"key out")
    control = next((c for c in value.strip() if (ord(c) < 32 or ord(c) == 127)
                    and not (lines and c in "\n\t")), None)
    if control is not None:
        raise ConfigError(path, key, f"contains a control character ({control!r}); write it on "
                                     f"one line")
    return value.strip()


def yaml_name(path: str, key: str, value: Any) -> str:
    """A name or alias of a GPU or model file: text as `yaml_text` reads it, in one word (a
    --gpu or --model value is looked up as one: `a100 x` was a name no lookup gave back)."""
    name = yaml_text(path, key, value)
    if any(c.isspace() for c in name):
        raise ConfigError(path, key, f"{excerpt(name)} has a space; a name is one word, e.g. "
                                     f"a100-sxm")
    return name


def yaml_aliases(path: str, key: str, value: Any, name: str) -> tuple[str, ...]:
    """A list of other names for the file's `name`, each a name as `yaml_text` reads one,
    without spaces (a lookup takes one word) and given once: lookups ignore case, so `a100`
    and `A100` are the same alias, and the name itself is no alias."""
    if not isinstance(value, list):
        raise ConfigError(path, key, f"must be a list of names, got {yaml_kind(value)}")
    seen = {name.lower()}
    out = []
    for i, item in enumerate(value):
        alias = yaml_name(path, f"{key}[{i}]", item)
        if alias.lower() in seen:
            what = "the file's name" if alias.lower() == name.lower() else "an earlier alias"
            raise ConfigError(path, f"{key}[{i}]", f"{excerpt(alias)} repeats {what} (names "
                                                   f"are matched ignoring case); drop it")
        seen.add(alias.lower())
        out.append(alias)
    return tuple(out)
