"""Issue 13 item 7: a sweep says, per row, whether the algorithm's tensors fit the GPU's HBM,
and that equals `compare`'s Footprint.fits point by point."""

from __future__ import annotations

import io

import pytest

from iosim.analysis.compare import compare
from iosim.analysis.sweep import SweepSpec, sweep
from iosim.inputs.workload import Workload
from iosim.output import sweep_stream


@pytest.mark.parametrize("spec", [
    SweepSpec(n=(1024, 65536, 262144), gpu=("a100", "t4"), d=(64, 128)),
    SweepSpec(n=(1, 4096), n_kv=(4096, 1 << 20), heads=(32,), kv_heads=(8, 32), d=(128,),
              batch=(1, 64), gpu=("h100",), algorithms=("standard", "flash2", "splitkv")),
    SweepSpec(n=(8192, 65536), heads=(16,), batch=(16,), pass_=("fwdbwd", "bwd"),
              gpu=("a100-40gb-sxm",), unfused=("dropout",)),
])
def test_fits_in_hbm_equals_compare(spec: SweepSpec) -> None:
    result = sweep(spec)
    cols = result.columns()
    seen = set()
    for row in range(len(cols["algorithm"])):
        w = Workload(int(cols["n"][row]), n_kv=int(cols["n_kv"][row]), d=int(cols["d"][row]),
                     heads=int(cols["heads"][row]), kv_heads=int(cols["kv_heads"][row]),
                     batch=int(cols["batch"][row]), pass_=str(cols["pass"][row]),
                     unfused=spec.unfused)
        name = str(cols["algorithm"][row])
        c = compare(w, str(cols["gpu"][row]), algorithms=[name])
        fits = c.algorithms[-1].footprint.fits
        assert bool(cols["fits_in_hbm"][row]) == fits, (row, name, w)
        seen.add(fits)
    assert seen == {True, False}  # each grid has rows on both sides of the capacity


def test_csv_and_table_carry_it() -> None:
    result = sweep(SweepSpec(n=(1024, 262144), gpu=("a100",)))
    out = io.StringIO()
    sweep_stream.write_csv(result, out)
    header, *rows = out.getvalue().splitlines()
    at = header.split(",").index("fits_in_hbm")
    assert [r.split(",")[at] for r in rows] == ["True"] * 3 + ["False", "True", "True"]
    from iosim.output.render_sweep import sweep_markdown

    assert "NO: HBM" in sweep_markdown(result)
