"""The measured decode kernels' programs per SM (analysis/decode_time.py MEASURED_TILES) are
the ones their compiled registers and shared memory give: ncu's launch__registers_per_thread
and launch__shared_mem_per_block_dynamic of every split-KV count over a shared prefix (the
paged split kernel, 16-row tiles) in tests/data/h200-variants.json, through CUDA's occupancy
rule (estimates/occupancy.py programs_per_sm), on the H200's SM limits."""

from __future__ import annotations

import json
from collections import Counter

import iosim
from iosim.analysis.compare import gpu_cc, gpu_sram_per_sm
from iosim.analysis.decode_time import MEASURED_TILES
from iosim.estimates.occupancy import programs_per_sm, sm_limits
from tests.conftest import DATA

RECORD = json.loads((DATA / "h200-variants.json").read_text())
SPLIT = "_iosim_decode_split_kernel"


def paged_split_launches() -> list[tuple[int, dict[str, float]]]:
    """(d, the split kernel's ncu row) of every split-KV count over a shared prefix."""
    shapes = {p["id"]: p for name, rows in RECORD.items() if name.startswith("cascade")
              and isinstance(rows, list) for p in rows}
    out = []
    for run in RECORD["counters"]:
        for c in run.get("points", []):
            if c.get("method") == "splitkv" and c["id"] in shapes:
                row = next(k for k in c["kernels"] if k["kernel"] == SPLIT)
                out.append((shapes[c["id"]]["d"], row))
    return out


def test_the_paged_split_kernel_holds_what_measured_tiles_says() -> None:
    hw = iosim.resolve_hardware("h200").hardware
    limits = sm_limits(gpu_sram_per_sm(hw), gpu_cc(hw))
    per_sm: dict[int, Counter[int]] = {}
    for d, row in paged_split_launches():
        assert row["launch__block_size"] == 128  # 4 warps (the record's decode_config)
        held = programs_per_sm(limits, shared_bytes=int(row["launch__shared_mem_per_block_dynamic"]),
                               warps=4, registers_per_thread=int(row["launch__registers_per_thread"]))
        per_sm.setdefault(d, Counter())[int(held)] += 1
    # d 64: 64 registers × 128 threads every time → 65,536 / 8,192 = 8 (shared memory: 10);
    # 37 counts to cascade_fresh8, 20 more in var13's cascade_fresh9
    assert per_sm[64] == Counter({8: sum(per_sm[64].values())}) and sum(per_sm[64].values()) == 57
    assert MEASURED_TILES.per_sm(64, paged=True) == 8
    # d 128: 5 every time, the tiling's shared-memory figure: nothing declared apart
    assert set(per_sm[128]) == {5}
    assert MEASURED_TILES.per_sm(128, paged=True) is None
