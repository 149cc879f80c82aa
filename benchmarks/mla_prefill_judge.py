"""`iosim compare --profile measured` itself against our Triton MLA prefill kernel's records:

    python benchmarks/mla_prefill_judge.py RECORD.json SECTION [SECTION ...]

Each ok triton point of RECORD's SECTION: compare's flash2 estimate at the kernel's tiles
(--block-q 128 --block-kv 64, what the record's block_m/block_n say) with the shipped
configs/gpus/h200.yaml (measured.mla_prefill_time), against do_bench's median; DRAM against
ncu's read + write. No constant is fitted here (the YAML's were fitted on the "fit" section of
tests/data/h200-mla-prefill.json only).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import iosim


def main(argv: list[str]) -> int:
    record = json.loads(Path(argv[0]).read_text())
    counts = {c["count_id"]: c for c in record["counters"]["points"]}
    print("| point | causal | dtype | measured µs | iosim µs | error | ncu DRAM MB | iosim DRAM "
          "MB | DRAM error |\n|---|---|---|---:|---:|---:|---:|---:|---:|")
    errors, drams = [], []
    for section in argv[1:]:
        for p in record[section]:
            if p["status"] != "ok" or p["impl"] != "triton":
                continue
            w = iosim.Workload(p["n"], d=p["d"], d_v=p["d_v"], heads=p["heads"],
                               batch=p["batch"], dtype=p["dtype"], causal=p["causal"])
            est = iosim.compare(w, "h200", algorithms=["flash2"], profile="measured",
                                block_q=p["block_m"], block_kv=p["block_n"]).algorithm("flash2")
            assert est.kernels[0].timed_by == "mla-prefill", p["id"]
            c = counts.get(p["id"])
            ncu = None if c is None else c["dram_read_bytes"] + c["dram_write_bytes"]
            err = est.time_s / p["time_s"] - 1
            derr = None if not ncu or est.dram is None else est.dram.bytes / ncu - 1
            errors.append(err)
            if derr is not None:
                drams.append(derr)
            print(f"| {p['id'].removesuffix('-triton')} | {'yes' if p['causal'] else 'no'} | "
                  f"{p['dtype']} | {p['time_s'] * 1e6:,.1f} | {est.time_s * 1e6:,.1f} | "
                  f"{err * 100:+.1f}% | {'—' if ncu is None else f'{ncu / 1e6:,.1f}'} | "
                  f"{'—' if est.dram is None else f'{est.dram.bytes / 1e6:,.1f}'} | "
                  f"{'—' if derr is None else f'{derr * 100:+.1f}%'} |")
    print(f"\ntime within ±15 %: {sum(abs(e) <= 0.15 for e in errors)} of {len(errors)}; "
          f"DRAM within ±10 %: {sum(abs(e) <= 0.10 for e in drams)} of {len(drams)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
