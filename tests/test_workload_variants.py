"""Workload fields of issue 14 items 4-5: d_v, latent_kv, fp8 dtypes and fp8_scales."""

from __future__ import annotations

import pytest

from iosim import Workload
from iosim.errors import WorkloadError


def test_d_v_defaults_to_d_and_keeps_the_workload_as_before() -> None:
    w = Workload(128, d=96)
    assert w.d_v == 96
    assert w.describe() == Workload(128, d=96, d_v=96).describe()
    assert "d_v" not in w.describe()


def test_mla_prefill_and_latent_decode_dims_are_accepted() -> None:
    # DeepSeek-V2 (arXiv 2405.04434, Appendix / config.json): qk_nope_head_dim 128 +
    # qk_rope_head_dim 64 = 192, v_head_dim 128; kv_lora_rank 512 (+ 64 rope = 576)
    prefill = Workload(4096, d=192, d_v=128, heads=128)
    assert (prefill.d, prefill.d_v) == (192, 128)
    decode = Workload(1, n_kv=4096, d=576, d_v=512, heads=128, kv_heads=1, latent_kv=True)
    assert decode.latent_kv and "latent KV" in decode.describe()


@pytest.mark.parametrize(("kwargs", "param"), [
    (dict(d_v=0), "d_v"),
    (dict(d_v=2.5), "d_v"),
    (dict(d_v=1 << 21), "d_v"),
    (dict(d=576, d_v=512, heads=4, kv_heads=2, latent_kv=True), "latent_kv"),
    (dict(d=512, d_v=512, kv_heads=1, latent_kv=True), "d_v"),
    (dict(latent_kv="yes"), "latent_kv"),
    (dict(fp8_scales="tensor"), "fp8_scales"),
    (dict(dtype="fp8_e4m3", fp8_scales="row"), "fp8_scales"),
    (dict(dtype="fp8_e4m3", pass_="bwd"), "dtype"),
])
def test_bad_variant_fields_name_their_parameter(kwargs: dict[str, object], param: str) -> None:
    with pytest.raises(WorkloadError) as caught:
        Workload(64, **kwargs)  # type: ignore[arg-type]
    assert caught.value.param == param
    assert "\n" not in str(caught.value)


def test_fp8_dtypes_are_one_byte_with_a_bf16_output_and_tensor_scales_by_default() -> None:
    for dtype in ("fp8_e4m3", "fp8_e5m2"):
        w = Workload(64, dtype=dtype)
        assert (w.element_bytes, w.output_dtype, w.output_element_bytes) == (1, "bf16", 2)
        assert w.fp8_scales == "tensor"
    assert Workload(64, dtype="fp8_e4m3", fp8_scales="block").fp8_scales == "block"
    # the generic 1-byte dtype keeps every tensor (O too) in one byte, as before
    assert Workload(64, dtype="fp8").output_element_bytes == 1
    assert Workload(64, dtype="fp8").fp8_scales is None
