"""Hostile output destinations (review 7): where `roofline`, `sweep --plot`, `report` and
`calibrate` write their files. A destination that cannot take a file is one `Error:` line,
exit 2, with nothing written; a file the user has is replaced only with --force, and then as
a whole (a new file renamed into place: never written through a link, never left half written).
Each test with a `before:` comment failed on 32ef341 (the failure is in its comment); the
others hold what was already right, and the two of output/files.py test its writer directly."""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

import pytest

from iosim.errors import IosimError
from iosim.output.files import write_atomically
from tests.hostile import assert_clean, invoke, snapshot

DATA = Path(__file__).parent / "data"
CALIBRATION = DATA / "h200-calibration.json"
IMPL_RECORD = DATA / "h200-impl-fit.json"
ROOFLINE = ["roofline", "--gpu", "a100", "--n", "256"]
SWEEP_PLOT = ["sweep", "--gpu", "a100", "--n", "256,512"]


def _refused(args: list[str], *needles: str) -> str:
    outcome = invoke(args)
    assert_clean(outcome, args)
    assert outcome.code == 2, outcome.err or outcome.out[:300]
    for needle in needles:
        assert needle in outcome.err, outcome.err
    return outcome.err


def test_a_link_in_a_figure_s_place_is_not_written_through(tmp_path: Path) -> None:
    # before: roofline.png -> ../mine.txt with --force overwrote mine.txt with the PNG
    mine = tmp_path / "mine.txt"
    mine.write_text("my notes\n", encoding="utf-8")
    out = tmp_path / "figs"
    out.mkdir()
    (out / "roofline.png").symlink_to(mine)
    args = [*ROOFLINE, "--out", str(out), "--force"]
    outcome = invoke(args)
    assert_clean(outcome, args)
    assert outcome.code == 0, outcome.err
    assert mine.read_text(encoding="utf-8") == "my notes\n"
    assert not (out / "roofline.png").is_symlink()
    assert (out / "roofline.png").read_bytes().startswith(b"\x89PNG")


def test_a_dangling_link_counts_as_a_file_there(tmp_path: Path) -> None:
    # before: roofline.png -> ../elsewhere.png (no such file) was "not there": the figure was
    # written through it, outside --out
    out = tmp_path / "figs"
    out.mkdir()
    (out / "roofline.png").symlink_to(tmp_path / "elsewhere.png")
    _refused([*ROOFLINE, "--out", str(out)], "roofline.png exists", "--force")
    assert not (tmp_path / "elsewhere.png").exists()


@pytest.mark.parametrize("kind", ["fifo", "device"])
def test_a_special_file_in_a_figure_s_place_is_refused_even_with_force(tmp_path: Path,
                                                                       kind: str) -> None:
    # before: a FIFO named roofline.png with --force hung in open() until a reader came
    out = tmp_path / "figs"
    out.mkdir()
    if kind == "fifo":
        os.mkfifo(out / "roofline.png")
    else:
        if not Path("/dev/null").exists():
            pytest.skip("needs /dev/null")
        (out / "roofline.png").symlink_to("/dev/null")
    before = snapshot(tmp_path)
    _refused([*ROOFLINE, "--out", str(out), "--force"], "roofline.png", "not a regular file")
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize("flag", ["--out", "--name"])
def test_a_control_character_in_an_output_name_is_refused(tmp_path: Path, flag: str) -> None:
    # before: --out $'a\nb' made a folder whose name printed over two lines ("wrote a" / "b/..")
    args = [*ROOFLINE, "--out", str(tmp_path / "a\nb")] if flag == "--out" else [
        *ROOFLINE, "--out", str(tmp_path), "--name", "fig\nure"]
    _refused(args, "control character")
    assert list(tmp_path.iterdir()) == []


def test_sweep_plot_into_a_device_is_refused(tmp_path: Path) -> None:
    # held: refused already on 32ef341
    _refused([*SWEEP_PLOT, "--plot", "/dev/full"], "--plot", "not a folder")


def test_report_into_a_fifo_folder_is_refused(tmp_path: Path) -> None:
    # held: refused already on 32ef341
    os.mkfifo(tmp_path / "pipe")
    _refused(["report", "--gpu", "a100", "--out", str(tmp_path / "pipe")], "not a folder")


def test_calibrate_out_over_its_own_measurement_file_is_refused(tmp_path: Path) -> None:
    # before: --out rec.json --from rec.json --force replaced the measurements with the YAML
    record = tmp_path / "rec.json"
    record.write_bytes(CALIBRATION.read_bytes())
    before = snapshot(tmp_path)
    _refused(["calibrate", "--gpu", "h200", "--out", str(record), "--from", str(record),
              "--force"], "--out", "--from", "choose another")
    assert snapshot(tmp_path) == before


def test_calibrate_impl_out_over_its_record_is_refused(tmp_path: Path) -> None:
    # before: the implementation record was replaced by the YAML written from it
    record = tmp_path / "impl.json"
    record.write_bytes(IMPL_RECORD.read_bytes())
    link = tmp_path / "same.json"
    link.symlink_to(record)
    before = snapshot(tmp_path)
    _refused(["calibrate", "--gpu", "h200", "--out", str(link), "--impl", "sdpa-flash",
              "--from", str(record), "--force"], "--out", "--from")
    assert snapshot(tmp_path) == before


def test_calibrate_out_and_record_to_one_file_is_refused(tmp_path: Path) -> None:
    # before: checked as two new files, then a GPU run would write the record and the YAML
    # over it (the refusal comes before the GPU is looked for)
    out = tmp_path / "h200.yaml"
    _refused(["calibrate", "--gpu", "h200", "--out", str(out), "--record", str(out)],
             "--out", "--record")
    assert not out.exists()


def test_calibrate_report_onto_a_file_is_refused_naming_the_flag(tmp_path: Path) -> None:
    # before: "Error: /dev/full: Not a directory" (no flag, no fix)
    _refused(["calibrate", "--gpu", "h200", "--out", str(tmp_path / "o.yaml"), "--from",
              str(CALIBRATION), "--report", "/dev/full"], "--report", "not a folder")
    assert not (tmp_path / "o.yaml").exists()


def test_roofline_figure_over_its_record_is_refused(tmp_path: Path) -> None:
    # before: --record roofline.svg --force: the record was read, then replaced by the figure
    record = tmp_path / "roofline.svg"
    record.write_bytes(CALIBRATION.read_bytes())
    before = snapshot(tmp_path)
    _refused([*ROOFLINE, "--out", str(tmp_path), "--record", str(record), "--force"],
             "--record", "choose another")
    assert snapshot(tmp_path) == before


def test_a_full_disk_mid_file_leaves_the_old_file_whole(tmp_path: Path) -> None:
    # before: Path.write_text truncated the file first, so a full disk left half of the new
    # text where the user's file was
    target = tmp_path / "h200.yaml"
    target.write_text("old: 1\n", encoding="utf-8")

    def half_then_full(temporary: Path) -> None:
        with open(temporary, "w", encoding="utf-8") as stream:
            stream.write("new: ")
            stream.flush()
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    with pytest.raises(IosimError, match=r"h200\.yaml.*No space left"):
        write_atomically(target, half_then_full)
    assert target.read_text(encoding="utf-8") == "old: 1\n"
    assert [p.name for p in tmp_path.iterdir()] == ["h200.yaml"]


def test_a_file_written_whole_gets_the_usual_permissions(tmp_path: Path) -> None:
    target = tmp_path / "new.txt"
    write_atomically(target, lambda temporary: temporary.write_text("x", encoding="utf-8"))
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE(target.stat().st_mode) == 0o666 & ~umask
    assert target.read_text(encoding="utf-8") == "x"


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
def test_a_read_only_folder_is_refused_before_anything_runs(tmp_path: Path) -> None:
    folder = tmp_path / "ro"
    folder.mkdir()
    folder.chmod(0o555)
    try:
        _refused([*ROOFLINE, "--out", str(folder)], "permission denied")
    finally:
        folder.chmod(0o755)
