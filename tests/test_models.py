"""Model presets (--model): the shipped figures against their published configs, the YAML
validation, the override rule, and compare/sweep/verify under a preset against the same
workload given flag by flag."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from iosim.errors import ConfigError, ModelError, UnknownModelError
from iosim.inputs.model_files import list_models, load_model, resolve_model
from iosim.inputs.model_presets import model_layers
from iosim.inputs.workload import Workload
from iosim.record import field_names

HAS_WINDOW = ("window" in set(field_names(Workload))
              and importlib.util.find_spec("iosim.algorithms.masks") is not None)
needs_window = pytest.mark.skipif(not HAS_WINDOW, reason="the masks branch's windowed tiles "
                                                         "(algorithms/masks.py) are not merged")

# Each row: (preset, heads, kv_heads, d, layers), as the model's published config.json gives
# them (num_attention_heads, num_key_value_heads, head_dim or hidden_size / heads,
# num_hidden_layers); the URLs are in each YAML's `sources` (`iosim models show NAME`).
PUBLISHED = [
    ("llama-3.1-8b", 32, 8, 128, 32),     # meta-llama/Llama-3.1-8B config.json; Llama 3 paper Table 3
    ("llama-3.1-70b", 64, 8, 128, 80),    # meta-llama/Llama-3.1-70B config.json; Table 3
    ("llama-3.1-405b", 128, 8, 128, 126),  # Llama 3 paper Table 3 (16384 / 128 heads)
    ("llama-3.2-1b", 32, 8, 64, 16),      # meta-llama/Llama-3.2-1B config.json (head_dim 64)
    ("llama-3.2-3b", 24, 8, 128, 28),     # meta-llama/Llama-3.2-3B config.json
    ("mistral-7b-v0.1", 32, 8, 128, 32),  # mistralai/Mistral-7B-v0.1 config.json; paper Table 1
    ("mixtral-8x7b", 32, 8, 128, 32),     # mistralai/Mixtral-8x7B-Instruct-v0.1 @eba9230 config.json
    ("gemma-2-2b", 8, 4, 256, 26),        # google/gemma-2-2b config.json
    ("gemma-2-9b", 16, 8, 256, 42),       # google/gemma-2-9b config.json
    ("gemma-2-27b", 32, 16, 128, 46),     # MaxText hf_model_configs.py@14b30db gemma2_27b_config
    ("gemma-3-1b", 4, 1, 256, 26),        # google/gemma-3-1b-it config.json
    ("gemma-3-4b", 8, 4, 256, 34),        # google/gemma-3-4b-it config.json (text model)
    ("gemma-3-12b", 16, 8, 256, 48),      # google/gemma-3-12b-it config.json (text model)
    ("gemma-3-27b", 32, 16, 128, 62),     # MaxText hf_model_configs.py@14b30db gemma3_27b_config
    ("qwen2.5-7b", 28, 4, 128, 28),       # Qwen/Qwen2.5-7B-Instruct config.json (3584 / 28)
    ("qwen3-8b", 32, 8, 128, 36),         # Qwen/Qwen3-8B config.json (head_dim 128)
    ("qwen3-32b", 64, 8, 128, 64),        # MaxText hf_model_configs.py@14b30db qwen3_32b_config
    ("qwen3-235b-a22b", 64, 4, 128, 94),  # MaxText ... qwen3_235b_a22b_thinking_2507_config
    ("deepseek-v3", 128, 128, 192, 61),   # deepseek-ai/DeepSeek-V3 config.json (128 + 64)
]


def test_every_shipped_model_is_in_the_table_of_published_figures():
    assert sorted(m.name for m in list_models()) == sorted(row[0] for row in PUBLISHED)


@pytest.mark.parametrize(("name", "heads", "kv_heads", "d", "layers"), PUBLISHED)
def test_shipped_figures_are_the_published_ones(name, heads, kv_heads, d, layers):
    m = resolve_model(name)
    assert (m.heads, m.kv_heads, m.d, m.layer_count) == (heads, kv_heads, d, layers)
    assert m.causal  # every shipped model is a decoder-only causal LM
    for key, fig in m.figures.items():
        assert fig.source in m.sources, key


@pytest.mark.parametrize("name", ["gemma-2-2b", "gemma-2-9b", "gemma-2-27b"])
def test_gemma2_layer_kinds_follow_transformers_alternation(name):
    # modeling_gemma2.py: is_sliding = not bool(layer_idx % 2), enumerated layer by layer
    m = resolve_model(name)
    local = sum(1 for i in range(m.layer_count) if i % 2 == 0)
    assert (m.group("local").count, m.group("global").count) == (local, m.layer_count - local)
    assert m.group("local").window == 4096 and m.group("global").window is None  # config sliding_window


@pytest.mark.parametrize(("name", "window"), [("gemma-3-1b", 512), ("gemma-3-4b", 1024),
                                              ("gemma-3-12b", 1024), ("gemma-3-27b", 1024)])
def test_gemma3_layer_kinds_follow_the_five_to_one_pattern(name, window):
    # modeling_gemma3.py @953196a: is_sliding = bool((layer_idx + 1) % sliding_window_pattern), 6
    m = resolve_model(name)
    local = sum(1 for i in range(m.layer_count) if (i + 1) % 6)
    assert (m.group("local").count, m.group("global").count) == (local, m.layer_count - local)
    assert m.group("local").window == window  # each config.json's sliding_window


def test_deepseek_forms_follow_the_mla_dimensions():
    # DeepSeek-V3 report §4.2 / config.json: d_c = 512, d_h^R = 64, d_h = 128 (no-rope), v 128
    m = resolve_model("deepseek-v3")
    prefill = model_layers(m, {"n": 64})[0].workload
    decode = model_layers(m, {"n": 1, "n_kv": 64}, latent_kv=True)[0].workload
    assert (prefill.heads, prefill.kv_heads, prefill.d, prefill.d_v) == (128, 128, 192, 128)
    assert (decode.kv_heads, decode.d, decode.d_v, decode.latent_kv) == (1, 576, 512, True)


def test_latent_kv_under_the_deepseek_preset_is_the_absorbed_form(iosim_cli):
    data = _compare_json(iosim_cli, "--model", "deepseek-v3", "--latent-kv", "--n", "1",
                         "--n-kv", "4096", "--gpu", "h100", "--algo", "splitkv")
    workload = data["layer_kinds"][0]["comparison"]["workload"]
    assert (workload["kv_heads"], workload["d"], workload["d_v"]) == (1, 576, 512)
    assert data["model"]["latent_kv"] is True


def test_aliases_and_unknown_names():
    assert resolve_model("gemma2-9b").name == "gemma-2-9b"
    with pytest.raises(UnknownModelError, match=r"Did you mean 'llama-3.1-8b'.*Shipped: deepseek-v3"):
        resolve_model("lama-3.1-8b")


GOOD = """schema_version: 1
name: mine
sources: {cfg: "my config.json"}
heads: {value: 16, source: cfg}
kv_heads: {value: 4, source: cfg}
d: {value: 64, source: cfg}
causal: {value: true, source: cfg}
layers: [{count: 12, source: cfg}]
"""


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "model.yaml"
    path.write_text(text)
    return path


def test_a_users_model_file_loads(tmp_path):
    m = load_model(_write(tmp_path, GOOD))
    assert (m.heads, m.kv_heads, m.d, m.d_v, m.layer_count, m.kinds) == (16, 4, 64, 64, 12, ("all",))


@pytest.mark.parametrize(("change", "message"), [
    (("heads: {", "haeds: {"), r"haeds: unknown key\. Did you mean 'heads'"),
    (("d: {value: 64, source: cfg}", "d: {value: 64}"), r"d\.source: missing"),
    (("d: {value: 64, source: cfg}", "d: {value: 64, source: cgf}"),
     r"not a key of sources\. Did you mean 'cfg'"),
    (("kv_heads: {value: 4", "kv_heads: {value: 5"), r"5 does not divide heads = 16"),
    (("count: 12", "count: 0"), r"layers\[0\]\.count: must be a whole number from 1"),
    (("count: 12", "count: 12, window: 0"), r"layers\[0\]\.window: must be a whole number from 1"),
    (("d: {value: 64", "d: {value: 64.5"), r"d\.value: must be a whole number"),
    (("schema_version: 1", "schema_version: 2"), r"schema_version: must be 1"),
    (("layers: [{count: 12, source: cfg}]", "layers: [{count: 6, source: cfg}, {count: 6, source: cfg}]"),
     r"layers\[0\]\.kind: must be a short lower-case name"),
    (("heads: {value: 16, source: cfg}", "heads: &h {value: 16, source: cfg}"), r"anchors and aliases"),
])
def test_bad_model_files_are_refused_naming_the_key(tmp_path, change, message):
    with pytest.raises(ConfigError, match=message):
        load_model(_write(tmp_path, GOOD.replace(*change)))


MLA = GOOD.replace("kv_heads: {value: 4, source: cfg}\nd: {value: 64, source: cfg}\n", """mla:
  q_lora_rank: {value: 1536, source: cfg}
  kv_lora_rank: {value: 512, source: cfg}
  qk_nope_head_dim: {value: 128, source: cfg}
  qk_rope_head_dim: {value: 64, source: cfg}
  v_head_dim: {value: 128, source: cfg}
""")


def test_mla_dims_that_do_not_add_up_are_refused(tmp_path, iosim_cli):
    assert load_model(_write(tmp_path, MLA)).d == 192
    bad = _write(tmp_path, MLA + "d: {value: 190, source: cfg}\n")
    with pytest.raises(ConfigError, match=r"d = qk_nope_head_dim \+ qk_rope_head_dim = 128 \+ 64 = 192"):
        load_model(bad)
    code, out, err = iosim_cli("compare", "--model", str(bad), "--n", "64", "--gpu", "h100")
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1 and "190" in err
    with pytest.raises(ConfigError, match=r"mla\.v_head_dim: missing"):
        load_model(_write(tmp_path, MLA.replace("  v_head_dim: {value: 128, source: cfg}\n", "")))


def test_cli_errors_are_one_line(iosim_cli):
    for args, needle in [
        (("--model", "lama-3.1-8b"), "unknown model 'lama-3.1-8b'. Did you mean"),
        (("--model", "llama-3.1-8b", "--heads", "16"),
         "--heads 16 contradicts --model llama-3.1-8b: its heads is 32"),
        (("--model", "llama-3.1-8b", "--layer", "local"), "llama-3.1-8b has no layer kind 'local'"),
        (("--layer", "local"), "--layer picks a layer kind of --model"),
        (("--model", "llama-3.1-8b", "--latent-kv"), "--latent-kv needs an MLA model"),
        (("--model", "deepseek-v3", "--d", "576"), "--d 576 contradicts --model deepseek-v3: its d is 192"),
        (("--model", "llama-3.1-8b", "--window", "512"), "its window is none"),
        (("--model", "gemma-3-4b", "--window", "512"), "its local layers' window is 1024"),
    ]:
        code, out, err = iosim_cli("compare", "--n", "64", "--gpu", "h100", *args)
        assert code == 2 and out == "" and len(err.strip().splitlines()) == 1, err
        assert needle in err, err


def test_a_flag_that_agrees_with_the_preset_is_accepted(iosim_cli):
    code, _, err = iosim_cli("compare", "--model", "llama-3.1-8b", "--heads", "32", "--d", "128",
                             "--causal", "--n", "64", "--gpu", "h100", "--format", "json")
    assert code == 0, err


def _compare_json(iosim_cli, *args):
    code, out, err = iosim_cli("compare", *args, "--format", "json")
    assert code == 0, err
    return json.loads(out)


def test_compare_model_is_compare_of_the_same_flags_times_the_layers(iosim_cli):
    shape = ("--n", "2048", "--batch", "2", "--gpu", "h100")
    preset = _compare_json(iosim_cli, "--model", "llama-3.1-8b", *shape)
    flags = _compare_json(iosim_cli, "--heads", "32", "--kv-heads", "8", "--d", "128", "--causal",
                          *shape)
    (kind,) = preset["layer_kinds"]
    assert kind["count"] == 32 and kind["comparison"] == flags
    for total in preset["whole_model"]:
        one = next(a for a in flags["algorithms"] if a["name"] == total["algorithm"])
        assert total["hbm_bytes"] == 32 * one["hbm_bytes"]
        assert total["hbm_bytes_per_token"] == 32 * one["hbm_bytes"] / (2 * 2048)


def test_one_point_sweep_under_a_preset_equals_compare(iosim_cli):
    shape = ("--n", "1024", "--gpu", "h100", "--algo", "flash2")
    code, out, err = iosim_cli("sweep", "--model", "qwen2.5-7b", *shape, "--format", "json")
    assert code == 0, err
    row = json.loads(out)["rows"][0]
    compared = _compare_json(iosim_cli, "--heads", "28", "--kv-heads", "4", "--d", "128",
                             "--causal", *shape)
    assert row["hbm_bytes"] == compared["algorithms"][0]["hbm_bytes"]


def test_multi_kind_models_need_a_layer_where_one_workload_runs(iosim_cli):
    code, _, err = iosim_cli("sweep", "--model", "gemma-2-9b", "--n", "1024", "--gpu", "h100")
    assert code == 2 and "pick it with --layer local" in err


def test_verify_under_a_preset(iosim_cli):
    code, out, err = iosim_cli("verify", "--model", "llama-3.2-1b", "--n", "64", "--block", "32",
                               "--algo", "flash2", "--format", "json")
    assert code == 0, err
    assert json.loads(out)["workload"]["heads"] == 32


@needs_window
def test_gemma_compare_sums_each_kind_and_says_what_windows_save(iosim_cli):
    data = _compare_json(iosim_cli, "--model", "gemma-3-4b", "--n", "8192", "--gpu", "h100",
                         "--algo", "flash2")
    local, glob = data["layer_kinds"]
    assert (local["count"], local["window"], glob["count"], glob["window"]) == (29, 1024, 5, None)
    hbm = [k["comparison"]["algorithms"][0]["hbm_bytes"] for k in (local, glob)]
    (total,) = data["whole_model"]
    assert total["hbm_bytes"] == 29 * hbm[0] + 5 * hbm[1]
    assert total["hbm_bytes_without_windows"] == 34 * hbm[1]  # global layers are the unwindowed ones
    assert total["hbm_bytes"] < total["hbm_bytes_without_windows"]


def test_models_listing(iosim_cli):
    code, out, _ = iosim_cli("models", "--format", "json")
    assert code == 0 and len(json.loads(out)) == len(PUBLISHED)
    code, out, _ = iosim_cli("models", "show", "deepseek-v3", "--format", "json")
    assert code == 0 and json.loads(out)["mla"]["latent_d"] == 576


def test_model_error_names_the_python_parameter():
    with pytest.raises(ModelError, match=r"heads=16 contradicts model=llama-3.1-8b"):
        model_layers(resolve_model("llama-3.1-8b"), {"n": 64}, given={"heads": 16})


@pytest.mark.skipif("window" not in set(field_names(Workload)),
                    reason="Workload.window (masks) not merged")
def test_a_window_covering_every_key_is_full_attention():
    # causal query i sees keys p_i - W < j <= p_i: with W >= n_kv that is every key j <= p_i
    gemma = resolve_model("gemma-3-4b")
    short = {ml.group.kind: ml.workload.window for ml in model_layers(gemma, {"n": 1024})}
    long = {ml.group.kind: ml.workload.window for ml in model_layers(gemma, {"n": 8192})}
    assert short == {"local": None, "global": None} and long == {"local": 1024, "global": None}


SHIPPED_GEMMA = (Path(__file__).parents[1] / "configs" / "models" / "gemma-3-4b.yaml").read_text()


@pytest.mark.parametrize(("old", "new"), [
    ("{value: 8, source: config", "{value: [8], source: config"),
    ("{value: 8, source: config", "{value: null, source: config"),
    ("{value: 8, source: config", "{value: 1e400, source: config"),
    ("{value: 8, source: config", "{value: '8', source: config"),
    ("{value: 8, source: config", "{value: true, source: config"),
    ("count: 29", "count: 99999999999999999999"),
    ("window: 1024", "window: -1"),
    ("layers:", "layers: 3\nlayerz:"),
    ("sources:", "sources: []\nsourcez:"),
    ("schema_version: 1", "schema_version: 1\nschema_version: 1"),
    ("heads:    {value: 8", "heads: !!python/object:os.system {value: 8"),
])
def test_mutated_model_files_get_one_error_line(tmp_path, old, new):
    from tests.hostile import assert_clean, invoke

    assert old in SHIPPED_GEMMA
    path = tmp_path / "m.yaml"
    path.write_text(SHIPPED_GEMMA.replace(old, new, 1))
    for args in (["compare", "--model", str(path), "--n", "64", "--gpu", "h100"],
                 ["models", "show", str(path), "--format", "json"]):
        outcome = invoke(args)
        assert_clean(outcome, args)
        assert outcome.code == 2 and str(path) in outcome.err


def test_sweep_under_the_deepseek_preset_takes_latent_kv(iosim_cli):
    code, out, err = iosim_cli("sweep", "--model", "deepseek-v3", "--latent-kv", "--n", "1",
                               "--n-kv", "4096", "--gpu", "h100", "--algo", "splitkv",
                               "--format", "json")
    assert code == 0, err
    row = json.loads(out)["rows"][0]
    assert (row["kv_heads"], row["d"], row["d_v"]) == (1, 576, 512)
    code, _, err = iosim_cli("sweep", "--model", "llama-3.1-8b", "--causal", "no", "--n", "64",
                             "--gpu", "h100")
    assert code == 2 and "contradicts --model llama-3.1-8b" in err


def test_compare_with_layer_sums_that_kind_only_and_says_so(iosim_cli):
    code, out, err = iosim_cli("compare", "--model", "gemma-2-9b", "--layer", "global", "--n",
                               "2048", "--gpu", "h100", "--algo", "flash2")
    assert code == 0, err
    assert "The global layers only (--layer): 21 of the model's 42" in " ".join(out.split())
    data = _compare_json(iosim_cli, "--model", "gemma-2-9b", "--layer", "global", "--n", "2048",
                         "--gpu", "h100", "--algo", "flash2")
    (kind,) = data["layer_kinds"]
    assert data["whole_model"][0]["hbm_bytes"] == 21 * kind["comparison"]["algorithms"][0]["hbm_bytes"]
