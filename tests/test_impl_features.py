"""Workload features per implementation (inputs/impl_features.py): each shipped profile declares
what its API takes, checked against a list written here from the APIs' own sources; the others
are refused in one line (CLI: exit 2; Python: FeatureError); a profile without the key refuses
nothing."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from iosim.analysis.compare import compare
from iosim.errors import ConfigError
from iosim.inputs.impl_features import FEATURES, FeatureError, workload_features
from iosim.inputs.implementations_yaml import get_implementation, shipped_implementations
from iosim.inputs.workload import Workload
from tests.conftest import run_cli as run

RUNS: dict[str, set[str]] = {
    # torch SDPA's flash backend: no attn_mask at all (pytorch
    # aten/src/ATen/native/transformers/cuda/sdp_utils.cpp can_use_flash_attention:
    # check_for_attn_mask), and SDPA has no window, block-sparse or page-table argument, so no
    # sparsity, window, document mask or paged cache. Causal: is_causal, or causal_lower_right
    # for n != n_kv (torch/nn/attention/bias.py CausalBias._dispatch calls the flash kernel).
    # Packed sequences: nested jagged tensors (torch/nested/_internal/sdpa.py
    # _can_use_flash_sdpa_jagged), FA2's varlen kernel.
    "sdpa-flash": {"causal", "varlen"},
    # Memory-efficient backend: it takes an attn_mask, but as a dense bias every block is still
    # computed (not the skipped blocks iosim counts for a window); nested jagged inputs in the
    # forward only (sdp_utils.cpp can_use_mem_efficient_attention: check_requires_grad_and_nested).
    "sdpa-efficient": {"causal", "varlen"},
    # cuDNN backend: nested inputs only behind TORCH_CUDNN_SDPA_NESTED_TENSOR_ENABLED on SM 9.0 /
    # 10.0 (sdp_utils.cpp check_for_nested_inputs): not declared.
    "sdpa-cudnn": {"causal"},
    # FlexAttention: a BlockMask visits only its listed blocks (torch/nn/attention/
    # flex_attention.py BlockMask kv_num_blocks / kv_indices): causal, block-sparse, sliding
    # window and document masks are mask_mods of create_block_mask; packed sequences run as a
    # document mask. Paged attention exists only as torch.nn.attention.experimental.
    # _paged_attention (private): not declared.
    "flex": {"causal", "sparsity", "window", "document", "varlen"},
    # eager matmul -> masked_fill -> softmax -> matmul: the causal mask only
    # (configs/impls/torch-naive.yaml's header, iosim/calibrate/measure.py's eager runner).
    "torch-naive": {"causal"},
    # iosim/calibrate/kernels.py attention_fwd(q, k, v, o, lse, causal=...): one flag, no mask.
    "iosim-triton": {"causal"},
}

WORKLOADS: dict[str, Workload] = {
    "causal": Workload(256, d=64, causal=True),
    "sparsity": Workload(256, d=64, sparsity=0.5),
    "window": Workload(256, d=64, causal=True, window=64),
    "varlen": Workload(256, d=64, seqlens=(100, 156)),
    "document": Workload(256, d=64, seqlens=(100, 156), packing="document"),
    "paged": Workload(1, n_kv=512, d=64, page_size=16),
    "shared_prefix": Workload(1, n_kv=300, d=64, batch=2, prefix_len=256, suffix_lens=(10, 44)),
}


def test_each_workload_uses_the_feature_it_is_named_for() -> None:
    assert set(WORKLOADS) == set(FEATURES)
    for name, workload in WORKLOADS.items():
        assert workload_features(workload) == (name,) or (
            name == "window" and workload_features(workload) == ("causal", "window")), name


def test_every_shipped_profile_declares_what_its_api_runs() -> None:
    assert set(shipped_implementations()) == set(RUNS)
    for name, runs in RUNS.items():
        profile = get_implementation(name)
        assert profile.features is not None, name
        assert {f.name for f in profile.features} == runs, name
        assert all(f.source.strip() for f in profile.features), name


@pytest.mark.parametrize("impl", sorted(RUNS))
def test_a_feature_is_estimated_where_declared_and_refused_elsewhere(impl: str) -> None:
    for feature, workload in WORKLOADS.items():
        if feature in RUNS[impl]:
            assert compare(workload, "h200", impl=impl).algorithms[-1].name == impl
            continue
        with pytest.raises(FeatureError) as err:
            compare(workload, "h200", impl=impl)
        message = str(err.value)
        running = sorted(n for n, runs in RUNS.items() if feature in runs and n != impl)
        assert message.startswith(f"{impl} does not run {FEATURES[feature].words}"), message
        assert "\n" not in message
        listed = re.search(r"shipped implementations that run it: ([^;]*);", message)
        assert sorted(listed.group(1).split(", ")) == running if running else listed is None


def test_refusal_at_the_cli_is_one_line_exit_2() -> None:
    code, _, stderr = run("compare", "--gpu", "h200", "--n", "4096", "--impl", "sdpa-flash",
                          "--sparsity", "0.5")
    assert code == 2 and stderr.count("\n") == 1
    assert "sdpa-flash does not run a block-sparse mask (--sparsity 0.5)" in stderr
    assert "--impl flex" in stderr
    code, _, stderr = run("compare", "--gpu", "h200", "--n", "1", "--n-kv", "4096",
                          "--impl", "flex", "--page-size", "16")
    assert code == 2 and stderr.count("\n") == 1 and "no shipped implementation" in stderr


def test_a_sweep_refuses_naming_the_point() -> None:
    code, _, stderr = run("sweep", "--gpu", "h200", "--n", "1024", "--causal", "--impl",
                          "sdpa-flash", "--window", "none,256")
    assert code == 2 and stderr.count("\n") == 1, stderr
    assert stderr.startswith("Error: at ") and "--window 256" in stderr.split(":")[1], stderr
    code, _, _ = run("sweep", "--gpu", "h200", "--n", "1024", "--causal", "--impl", "flex",
                     "--window", "none,256")
    assert code == 0


def _profile(tmp_path: Path, name: str, features: str | None) -> str:
    text = Path(get_implementation("sdpa-flash").path).read_text()
    head = text[:text.index("\nfeatures:")] + "\n"
    path = tmp_path / f"{name}.yaml"
    path.write_text(head.replace("name: sdpa-flash", f"name: {name}")
                    + (features if features is not None else ""))
    return str(path)


def test_an_old_profile_without_the_key_refuses_nothing(tmp_path: Path) -> None:
    path = _profile(tmp_path, "old-fa2", None)
    assert get_implementation(path).features is None
    for workload in (WORKLOADS["sparsity"], WORKLOADS["window"], WORKLOADS["document"]):
        assert compare(workload, "h200", impl=path).algorithms[-1].name == "old-fa2"


def test_forward_only_refuses_the_backward(tmp_path: Path) -> None:
    path = _profile(tmp_path, "fwd-varlen", "features:\n  - {name: varlen, forward_only: true, "
                    'source: "a test"}\n')
    packed = WORKLOADS["varlen"]
    assert compare(packed, "h200", impl=path).algorithms[-1].name == "fwd-varlen"
    with pytest.raises(FeatureError, match="forward pass only") as err:
        compare(packed.with_(pass_="fwdbwd"), "h200", impl=path)
    assert err.value.param == "pass_"


def test_bad_features_are_refused_with_file_and_key(tmp_path: Path) -> None:
    cases = {
        "unknown": ("features:\n  - {name: ring, source: s}\n", "features[0].name"),
        "twice": ("features:\n  - {name: causal, source: s}\n  - {name: causal, source: t}\n",
                  "features[1].name"),
        "no source": ("features:\n  - {name: causal}\n", "features[0].source"),
        "not a list": ("features: causal\n", "features"),
        "flag type": ("features:\n  - {name: causal, source: s, forward_only: 1}\n",
                      "features[0].forward_only"),
    }
    for what, (block, key) in cases.items():
        path = _profile(tmp_path, what.replace(" ", "-"), block)
        with pytest.raises(ConfigError) as err:
            get_implementation(path)
        assert key in str(err.value), what
    nothing = _profile(tmp_path, "none-declared", "features: []\n")
    with pytest.raises(FeatureError, match="features are none"):
        compare(WORKLOADS["causal"], "h200", impl=nothing)


def test_a_dtype_no_shipped_implementation_runs_says_so() -> None:
    # every shipped profile's dtypes are fp16/bf16/fp32 (FP8 is FlashAttention-3's, not
    # FA2's: sdp_utils.cpp admits Float8_e4m3fn only with FA3 enabled on sm90)
    code, _, stderr = run("compare", "--gpu", "h200", "--n", "256", "--impl", "sdpa-flash",
                          "--dtype", "fp8_e4m3")
    assert code == 2 and stderr.count("\n") == 1
    assert "or no --impl (no shipped implementation runs it)" in stderr, stderr


def test_python_sweep_and_report_refuse_too(tmp_path: Path) -> None:
    from iosim import SweepSpec, sweep

    grid = {"n": (256,), "gpu": ("h200",), "sparsity": (1.0, 0.5)}
    with pytest.raises(FeatureError, match=r"^at d=64, n=256, sparsity=0\.5: sdpa-flash"):
        sweep(SweepSpec(**grid, impl="sdpa-flash"))
    assert sweep(SweepSpec(**grid, impl="flex")).spec.points == 2
    out = tmp_path / "report"
    code, _, stderr = run("report", "--gpu", "h200", "--n", "256", "--impl", "sdpa-flash",
                          "--window", "64", "--causal", "--out", str(out))
    assert code == 2 and stderr.count("\n") == 1 and "does not run a sliding window" in stderr
    assert not out.exists()
