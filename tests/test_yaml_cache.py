"""The shipped YAMLs' parse cache (inputs/yaml_cache.py): a changed file is always parsed again,
and a cache that is missing, corrupt, off or read-only changes nothing but the time taken."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from iosim.inputs import safe_yaml, yaml_cache
from iosim.inputs.gpus import shipped_config_paths
from iosim.inputs.shipped import SHIPPED_KINDS, shipped_yaml_files

GPU = """schema_version: 1
name: cache-test
peak: 100
"""


class CountingParse:
    """safe_yaml's own parse of a file, counting how often it runs."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, path: str) -> Any:
        self.calls += 1
        return safe_yaml._parse_file(path)


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh cache folder, and no settling time: each test's file is cached at once."""
    folder = tmp_path / "cache"
    monkeypatch.setenv(yaml_cache.CACHE_DIR_ENV, str(folder))
    monkeypatch.setattr(yaml_cache, "SETTLED_NS", 0)
    return folder


def _read(path: Path, parse: CountingParse, reader: Path | None = None) -> Any:
    return yaml_cache.cached_read(str(path), parse, str(reader or safe_yaml.__file__))


def _rewrite_keeping_mtime(path: Path, text: str) -> None:
    """A rewrite of the same size with the old modification time put back (what an editor
    undoing a change, or a copy with `cp -p`, can leave): only the change time tells."""
    before = path.stat()
    assert len(text.encode()) == before.st_size
    time.sleep(0.05)  # past the system clock's tick, so that the change time moves
    path.write_text(text)
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))


def test_a_file_is_parsed_once_while_it_does_not_change(tmp_path: Path, cache: Path) -> None:
    gpu, parse = tmp_path / "gpu.yaml", CountingParse()
    gpu.write_text(GPU)
    first = _read(gpu, parse)
    assert _read(gpu, parse) == first == {"schema_version": 1, "name": "cache-test", "peak": 100}
    assert parse.calls == 1 and len(list(cache.iterdir())) == 1


def test_a_changed_file_is_parsed_again(tmp_path: Path, cache: Path) -> None:
    gpu, parse = tmp_path / "gpu.yaml", CountingParse()
    gpu.write_text(GPU)
    _read(gpu, parse)
    _rewrite_keeping_mtime(gpu, GPU.replace("100", "200"))
    assert _read(gpu, parse)["peak"] == 200 and parse.calls == 2
    gpu.write_text(GPU.replace("100", "3000"))  # another size
    assert _read(gpu, parse)["peak"] == 3000 and parse.calls == 3
    gpu.unlink()
    gpu.write_text(GPU)  # a new file in its place
    assert _read(gpu, parse)["peak"] == 100 and parse.calls == 4
    assert _read(gpu, parse)["peak"] == 100 and parse.calls == 4


def test_a_changed_reader_parses_again(tmp_path: Path, cache: Path) -> None:
    gpu, reader, parse = tmp_path / "gpu.yaml", tmp_path / "reader.py", CountingParse()
    gpu.write_text(GPU)
    reader.write_text("# rules\n")
    _read(gpu, parse, reader)
    reader.write_text("# other rules\n")
    _read(gpu, parse, reader)
    assert parse.calls == 2


def test_a_recently_changed_file_is_not_cached(tmp_path: Path, cache: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """git's racy rule: a change younger than SETTLED_NS could be followed by another in the
    same clock tick, which no time in the key would show."""
    monkeypatch.setattr(yaml_cache, "SETTLED_NS", 3_600 * 10**9)
    gpu, parse = tmp_path / "gpu.yaml", CountingParse()
    gpu.write_text(GPU)
    _read(gpu, parse)
    _read(gpu, parse)
    assert parse.calls == 2 and not cache.exists()


@pytest.mark.parametrize("damage", [b"", b"\x00garbage", b"\xe3\x03\x00\x00\x00"])
def test_a_corrupt_entry_is_parsed_over(tmp_path: Path, cache: Path, damage: bytes) -> None:
    gpu, parse = tmp_path / "gpu.yaml", CountingParse()
    gpu.write_text(GPU)
    _read(gpu, parse)
    (entry,) = cache.iterdir()
    entry.write_bytes(damage)
    assert _read(gpu, parse)["peak"] == 100 and parse.calls == 2
    assert _read(gpu, parse)["peak"] == 100 and parse.calls == 2  # rewritten whole


def test_a_cache_that_is_off_or_cannot_be_written(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    gpu, parse = tmp_path / "gpu.yaml", CountingParse()
    gpu.write_text(GPU)
    monkeypatch.setattr(yaml_cache, "SETTLED_NS", 0)
    monkeypatch.setenv(yaml_cache.CACHE_DIR_ENV, "")
    _read(gpu, parse)
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("")
    monkeypatch.setenv(yaml_cache.CACHE_DIR_ENV, str(blocker / "cache"))
    assert _read(gpu, parse)["peak"] == 100
    assert _read(gpu, parse)["peak"] == 100
    assert parse.calls == 3 and sorted(p.name for p in tmp_path.iterdir()) == [
        "gpu.yaml", "not-a-folder"]


def test_only_the_shipped_files_are_cached(tmp_path: Path, cache: Path) -> None:
    """A user's own YAML is parsed every time; each shipped file (GPUs, implementations,
    models) gives the same data from the cache as parsed."""
    own = tmp_path / "gpu.yaml"
    own.write_text(GPU)
    safe_yaml.read_yaml(own)
    assert not cache.exists()
    shipped = [f for kind in SHIPPED_KINDS for f in shipped_yaml_files(kind, kind)]
    parsed = [safe_yaml.read_yaml(f) for f in shipped]
    assert len(list(cache.iterdir())) == len(shipped)
    assert [safe_yaml.read_yaml(f) for f in shipped] == parsed
    assert parsed == [safe_yaml._parse_file(f) for f in shipped]


def test_a_second_compare_parses_no_yaml(tmp_path: Path) -> None:
    """What the cache is for: with it filled, `iosim compare` neither parses a YAML nor
    imports PyYAML; nor does it import pathlib or fractions, on either run (start-up time,
    benchmarks/import_speed.py)."""
    env = {**os.environ, yaml_cache.CACHE_DIR_ENV: str(tmp_path)}
    code = ("import sys; from click.testing import CliRunner; from iosim.cli import cli; "
            "r = CliRunner().invoke(cli, ['compare', '--gpu', 'a100', '--n', '4096']); "
            "assert r.exit_code == 0, r.output; "
            "print(sorted(m for m in ('yaml', 'pathlib', 'fractions') if m in sys.modules))")
    runs = [subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           check=True, env=env).stdout.strip() for _ in range(2)]
    assert runs == ["['yaml']", "[]"]
    assert len(shipped_config_paths()) > 2  # the alias lookup read two of them, not all
    assert len(list(tmp_path.iterdir())) == 3  # a100-40gb-sxm, a100-80gb-sxm, sdpa-flash


def test_where_the_cache_lives(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv(yaml_cache.CACHE_DIR_ENV)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert yaml_cache.cache_dir() == str(tmp_path / "iosim")
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert yaml_cache.cache_dir() == str(tmp_path / ".cache" / "iosim")
    monkeypatch.setattr(os.path, "expanduser", lambda path: path)  # no home folder known
    assert yaml_cache.cache_dir() is None
