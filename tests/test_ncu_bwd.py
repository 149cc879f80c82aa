"""ncu's launches cut into the backward record's segments (calibrate/ncu_bwd.py; pure, no GPU)."""

from __future__ import annotations

from pathlib import Path

import pytest

from iosim.calibrate.ncu_bwd import EVICT, profile_command, segments


def launch(kernel: str, read: float = 1.0, write: float = 2.0) -> dict:
    return {"kernel": kernel, "dram__bytes_read.sum": read, "dram__bytes_write.sum": write,
            "lts__t_bytes.sum": 3.0, "gpu__time_duration.sum": 1000.0}


def test_segments_follow_the_evicts_and_count_the_closing_residue() -> None:
    launches = [launch(EVICT), launch("pre"), launch("dkdv"), launch(EVICT, write=7.0),
                launch(EVICT), launch("a"), launch(EVICT, write=5.0), launch("b"),
                launch(EVICT, write=4.0)]
    manifest = [{"id": "p", "what": "triton", "isolate": False, "evicts": 2},
                {"id": "q", "what": "triton", "isolate": True, "evicts": 3}]
    out = segments(launches, manifest)
    assert [k["kernel"] for k in out[0]["segments"][0]["kernels"]] == ["pre", "dkdv"]
    assert out[0]["segments"][0]["residue_write_bytes"] == 7.0
    assert [s["residue_write_bytes"] for s in out[1]["segments"]] == [5.0, 4.0]
    assert out[1]["segments"][1]["kernels"][0]["time_s"] == pytest.approx(1e-6)


def test_a_launch_stream_out_of_step_with_the_manifest_is_an_error() -> None:
    with pytest.raises(ValueError, match="expected an evict kernel"):
        segments([launch("pre")], [{"id": "p", "what": "triton", "isolate": False, "evicts": 2}])
    with pytest.raises(ValueError, match="end inside a segment"):
        segments([launch(EVICT), launch("pre")],
                 [{"id": "p", "what": "triton", "isolate": False, "evicts": 2}])
    with pytest.raises(ValueError, match="1 profiled launches left"):
        segments([launch(EVICT), launch(EVICT), launch("x")],
                 [{"id": "p", "what": "triton", "isolate": False, "evicts": 2}])


def test_the_command_profiles_from_cudaProfilerStart_with_caches_and_clocks_left_alone() -> None:
    from pathlib import Path

    cmd = profile_command("ncu", Path("r"), Path("s"), Path("m"))
    text = " ".join(cmd)
    assert "--profile-from-start off" in text and "--cache-control none" in text
    assert "--clock-control none" in text and "gpu__time_duration.sum" in text


def test_both_calibrations_report_a_refusing_ncu_through_one_runner(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """The forward and backward collectors share calibrate.ncu.profile: an ncu that fails its
    profiling run (exit status 3, as an ncu without counter permission does) is reported, with
    the command shown, by both, and nothing is parsed."""
    from iosim.calibrate import ncu, ncu_bwd

    fake = tmp_path / "ncu"
    fake.write_text("#!/bin/sh\n[ \"$1\" = --version ] && echo 'NVIDIA Nsight Compute 2025.3' && exit 0\n"
                    "exit 3\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}:/usr/bin:/bin")
    forward = ncu.collect([{"id": "x"}], timeout_s=30)
    backward = ncu_bwd.collect([{"id": "x"}], timeout_s=30)
    assert forward.status == "refused: exit status 3"
    assert backward["status"] == "refused: exit status 3"
    assert forward.command.endswith("python3 -m iosim.calibrate.ncu_target SPEC MANIFEST")
    assert backward["command"].endswith("python3 -m iosim.calibrate.ncu_bwd_target SPEC MANIFEST")
