"""Issue 14, var10: the shared prefix re-read by later waves (estimates/prefix_waves.py), judged
on ncu's DRAM bytes with the protocol residue (calibrate/dirty_ledger.as_counted), as var9
judged its rules (benchmarks/var9_residue_judge.py, whose rows and tables this reuses).

    python benchmarks/var10_prefix_judge.py --json --seen > X.json    # every earlier point
    python benchmarks/var10_prefix_judge.py --json --fresh > X.json   # cascade_fresh6 only
    python benchmarks/var10_prefix_judge.py --join OFF.json ON.json [--rows]

--seen: every counted decoding point of tests/data/h200-variants.json before cascade_fresh6
(all families), and the two prefix probes of mla5 (benchmarks/mla-prefill-h200/prefix-probe.json,
fresh/prefix-fresh.json: split-KV over shared prefixes, seen since var6) as the family
"shared-prefix split-KV", sections probe1 and probe2. OFF: main before var10 (PYTHONPATH at that
checkout), ON: this branch.
"""

from __future__ import annotations

import contextlib
import io
import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

import prefix_l2_judge as probes
import var9_residue_judge as v9

from iosim.calibrate.dirty_ledger import as_counted

HERE = Path(__file__).parent / "mla-prefill-h200"
PROBES = {"probe1": HERE / "prefix-probe.json", "probe2": HERE / "fresh" / "prefix-fresh.json"}
FRESH = ("cascade_fresh6",)
FAMILY = "shared-prefix split-KV"


def probe_rows() -> list[dict[str, Any]]:
    """The probes' split-KV points as var9_residue_judge's rows (the ones iosim models)."""
    rows = []
    for section, path in PROBES.items():
        items = {c["count_id"]: c for c in probes.probe_items(path)}
        with contextlib.redirect_stdout(io.StringIO()):  # its "not modelled" lines
            judged = probes.judged(list(items.values()))
        for cid, _prefix, _programs, _waves, ncu, model, _ in judged:
            c = items[cid]
            rows.append({"id": cid, "section": section, "family": FAMILY,
                         "read": c["dram_read_bytes"], "write": c["dram_write_bytes"],
                         "measured": ncu, "model": model, "bare_error": model / ncu - 1,
                         "error": as_counted(model) / ncu - 1})
    return rows


def main(argv: list[str]) -> int:
    if argv[:1] == ["--join"]:
        off, on = (json.loads(Path(p).read_text()) for p in argv[1:3])
        v9.print_join(off, on, "--rows" in argv)
        return 0
    rows = v9.residue_rows(v9.load([a for a in argv if not a.startswith("--")]))
    if "--fresh" in argv:
        rows = [r for r in rows if r["section"] in FRESH]
    if "--seen" in argv:
        rows = [r for r in rows if r["section"] not in FRESH] + probe_rows()
    print(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
