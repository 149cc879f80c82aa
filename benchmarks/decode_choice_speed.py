"""Wall time of `iosim compare` where it runs the decoding time model (issue 14: well under a
second): `--splits auto` (every split count FA2 would run, timed) and a shared-prefix batch
(the cascade verdict: split-KV at 1, 2, 4, ... splits and cascade at every split pair).

    python benchmarks/decode_choice_speed.py [--runs 10]

Each command as a fresh process, and the model's own part in this process (choose_splits and
cascade_verdict after one warm call; a fresh process adds its imports and compare's tables,
`iosim compare` without the flags); prints the median and the worst of the runs (docs/
variants-decoding.md records the figures).
"""

from __future__ import annotations

import argparse
import statistics
import time

from compare_speed import fresh_process_report, iosim_command  # the script's own folder

COMMANDS = {
    "--splits auto, batch 1, 128k keys": [
        "compare", "--n", "1", "--n-kv", "131072", "--d", "128", "--heads", "32",
        "--kv-heads", "8", "--gpu", "h200", "--algo", "splitkv", "--splits", "auto"],
    "--splits auto, batch 4, 8k keys": [
        "compare", "--n", "1", "--n-kv", "8192", "--d", "128", "--heads", "32", "--kv-heads",
        "8", "--batch", "4", "--gpu", "h200", "--algo", "splitkv", "--splits", "auto"],
    "plain compare, batch 4, 8k keys (the baseline)": [
        "compare", "--n", "1", "--n-kv", "8192", "--d", "128", "--heads", "32", "--kv-heads",
        "8", "--batch", "4", "--gpu", "h200", "--algo", "splitkv"],
    "--prefix-len 4096, 64 requests of 4 lengths": [
        "compare", "--n", "1", "--d", "128", "--heads", "32", "--kv-heads", "8", "--gpu",
        "h200", "--prefix-len", "4096", "--suffix-lens", ",".join(["16,3000,200,4000"] * 16)],
}


def in_process(runs: int) -> None:
    """The model's part alone: choose_splits and cascade_verdict, median of `runs`."""
    from iosim import Workload
    from iosim.analysis.cascade_verdict import cascade_verdict
    from iosim.analysis.compare import compare
    from iosim.analysis.split_choice import choose_splits

    long_kv = Workload(1, n_kv=131072, d=128, heads=32, kv_heads=8)
    batch = Workload(1, n_kv=8096, d=128, heads=32, kv_heads=8, batch=64, prefix_len=4096,
                     suffix_lens=(16, 3000, 200, 4000) * 16)
    result = compare(batch, "h200")
    for label, call in (("choose_splits, batch 1, 128k keys",
                         lambda: choose_splits(long_kv, "h200")),
                        ("cascade_verdict, 64 requests of 4 lengths",
                         lambda: cascade_verdict(result))):
        call()
        times = []
        for _ in range(runs):
            start = time.perf_counter()
            call()
            times.append(time.perf_counter() - start)
        print(f"{label} (in process): median {statistics.median(times) * 1e3:.0f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=10)
    args = parser.parse_args()
    in_process(args.runs)
    for label, words in COMMANDS.items():
        print(fresh_process_report(label, iosim_command(*words), args.runs))

if __name__ == "__main__":
    main()
