"""`iosim report`: the folder's files, its numbers, its HTML in a real (headless) browser."""

from __future__ import annotations

import csv
import json
import shutil
import tempfile
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import click
import pytest

from iosim.analysis.compare import compare
from iosim.inputs.workload import Workload
from tests.conftest import run_cli as run
from tests.hostile import strict_json

SMALL = ["--n-range", "256..2048", "--block-range", "32..512", "--compare-gpus", "h100,l4"]




@pytest.fixture(scope="module")
def report_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("report") / "a100"
    code, out, err = run("report", "--gpu", "a100", "--out", str(folder), *SMALL)
    assert code == 0, err
    assert out.startswith("wrote 24 files to ")
    return folder


def test_files(report_dir: Path) -> None:
    names = {p.name for p in report_dir.iterdir()}
    stems = ("roofline", "traffic_vs_n", "block-kv_sweep_flash1", "block-q_sweep_flash2",
             "gpu_comparison")
    assert names == ({"index.md", "index.html", "summary.json", "compare_kernels.csv",
                      "compare_terms.csv", "roofline_points.csv"}
                     | {f"{s}.{e}" for s in (*stems, "time_vs_n", "roofline_levels")
                        for e in ("png", "svg")}
                     | {f"{s}.csv" for s in stems if s != "roofline"})


def test_summary_numbers_are_compares(report_dir: Path) -> None:
    summary = strict_json((report_dir / "summary.json").read_text())  # no NaN/Infinity (issue 12)
    assert summary["schema"] == "iosim.report/1"
    assert summary["command"].startswith("iosim report --gpu a100 --out ")
    assert summary["iosim_version"] == __import__("iosim").__version__
    assert summary["gpu"]["path"] == "configs/gpus/a100-80gb-sxm.yaml"
    # the default workload: FlashAttention Fig. 2's GPT-2 medium shape
    w = Workload(1024, d=64, heads=16, batch=64)
    c = compare(w, "a100")
    for a in c.algorithms:
        got = summary["algorithms"][a.name]
        assert got["hbm_bytes"] == a.hbm_bytes and got["time_s"] == a.time_s
        assert got["bound"] == a.bound
    assert [row["gpu"] for row in summary["gpu_comparison"]] == ["a100-80gb-sxm", "h100-sxm",
                                                                  "l4"]
    h100 = compare(w, "h100").algorithm("flash2")
    assert summary["gpu_comparison"][1]["flash2"] == {"time_s": h100.time_s, "bound": h100.bound}
    assert summary["files"] == sorted(p.name for p in report_dir.iterdir())


def test_csv_tables(report_dir: Path) -> None:
    with open(report_dir / "traffic_vs_n.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert [int(r["n"]) for r in rows[::3]] == [256, 512, 1024, 2048]
    with open(report_dir / "compare_terms.csv", newline="") as f:
        terms = list(csv.DictReader(f))
    assert any(t["cite"] == "Alg. 1 line 6: load K_j" for t in terms)


def test_markdown_links_every_figure(report_dir: Path) -> None:
    text = (report_dir / "index.md").read_text()
    for stem in ("roofline", "roofline_levels", "traffic_vs_n", "time_vs_n", "block-kv_sweep_flash1",
                 "block-q_sweep_flash2", "gpu_comparison"):
        assert f"({stem}.png)]({stem}.svg)" in text
    # N up to 2,048 at batch 64 × 16 heads: standard's S and P (2 · 2 B · N² · 1024 = 17 GB)
    # fit the 80 GB
    assert "Every point fits the GPU's 80.0 GB of HBM" in text


class _Images(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.images: list[dict[str, str | None]] = []
        self.links: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "img":
            self.images.append(dict(attrs))
        if tag == "a":
            self.links.append(dict(attrs)["href"] or "")


def test_html_images_resolve_to_decodable_files(report_dir: Path) -> None:
    """Without a browser: every <img> and link names a file of the folder, PNGs of the stated
    size, SVGs that parse."""
    import xml.etree.ElementTree as ET

    import matplotlib.image

    parser = _Images()
    parser.feed((report_dir / "index.html").read_text())
    assert len(parser.images) == 7
    for img in parser.images:
        src = report_dir / str(img["src"])
        height, width = matplotlib.image.imread(src).shape[:2]
        assert (width, height) == (int(str(img["width"])), int(str(img["height"])))
    for href in parser.links:
        assert (report_dir / href).is_file(), href
        if href.endswith(".svg"):
            assert ET.parse(report_dir / href).getroot().tag.endswith("svg")


CHROMIUM, CHROMEDRIVER = shutil.which("chromium"), shutil.which("chromedriver")


@pytest.mark.skipif(CHROMIUM is None or CHROMEDRIVER is None,
                    reason="needs Debian's chromium and chromium-driver (.ci/run installs them)")
def test_html_in_headless_chromium(report_dir: Path) -> None:
    """Open index.html from disk in Chromium: every image loads, and every linked SVG too."""
    webdriver = pytest.importorskip("selenium.webdriver")
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for flag in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                 "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage"):
        options.add_argument(flag)
    profile = tempfile.mkdtemp()
    options.add_argument(f"--user-data-dir={profile}")
    driver = webdriver.Chrome(options=options, service=Service(str(CHROMEDRIVER)))
    try:
        driver.get((report_dir / "index.html").as_uri())
        assert driver.title == "iosim report — NVIDIA A100 80GB SXM4"
        images: list[list[Any]] = driver.execute_script(
            "return Array.from(document.images).map("
            "i => [i.getAttribute('src'), i.complete, i.naturalWidth, i.naturalHeight])")
        assert len(images) == 7
        for src, complete, width, height in images:
            assert complete and width > 0 and height > 0, src
        svgs: list[list[Any]] = driver.execute_async_script("""
            const done = arguments[arguments.length - 1];
            const hrefs = Array.from(document.querySelectorAll('a[href$=".svg"]'))
                .map(a => a.href);
            Promise.all(hrefs.map(h => new Promise(resolve => {
                const im = new Image();
                im.onload = () => resolve([h, im.naturalWidth]);
                im.onerror = () => resolve([h, 0]);
                im.src = h;
            }))).then(done);""")
        assert len(svgs) >= 5
        for href, width in svgs:
            assert width > 0, href
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def test_refuses_a_non_empty_folder_unless_force_and_marks_where_standard_needs_more_hbm(
        tmp_path: Path) -> None:
    # one report build for both (each build draws 14 figures): a non-empty folder is refused,
    # then written over with --force; that report's workload is the HBM one.
    # batch 64 × 16 heads: standard's S and P take 2 · 2 B · N² · 1024 = 68.7 GB at N 4,096
    # (fits 80 GB with Q, K, V, O) and 275 GB at N 8,192 (does not)
    folder = tmp_path / "r"
    folder.mkdir()
    (folder / "notes.txt").write_text("mine")
    args = ["--n-range", "2048..16384", "--block-range", "64,128", "--compare-gpus", "a100"]
    code, out, err = run("report", "--gpu", "a100", "--out", str(folder), *args)
    assert code == 2 and out == ""
    assert err == f"Error: --out {folder} is not empty; choose a new folder or add --force to " \
                  f"write over it\n"
    code, _, err = run("report", "--gpu", "a100", "--out", str(folder), "--force", *args)
    assert code == 0, err
    assert (folder / "notes.txt").read_text() == "mine"  # --force replaces, never deletes
    assert "--force" in json.loads((folder / "summary.json").read_text())["command"]
    text = (folder / "index.md").read_text()
    assert ("Hollow markers need more than the GPU's 80.0 GB of HBM (inputs, outputs and what "
            "the algorithm holds beside them): standard from N = 8,192.") in text
    assert "```\niosim report --gpu a100" in text


@pytest.mark.parametrize(("args", "message"), [
    (["--n-range", "4096..512"], "range '4096..512' is descending (empty)"),
    (["--block-range", "32,x"], "'x' is not a whole number"),
    (["--compare-gpus", "h100,nope"], "unknown GPU 'nope'"),
    (["--gpu", "nope"], "unknown GPU 'nope'"),
])
def test_bad_report_input(tmp_path: Path, args: list[str], message: str) -> None:
    if "--gpu" not in args:
        args = ["--gpu", "a100", *args]
    code, _, err = run("report", "--out", str(tmp_path / "r"), *args)
    assert code == 2 and err.count("\n") == 1 and message in err


def test_unwritable_report_folder(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    code, _, err = run("report", "--gpu", "a100", "--out", str(blocker / "sub"), *SMALL)
    assert code == 2
    assert err == f"Error: cannot write to --out {blocker / 'sub'}: Not a directory; choose a " \
                  f"folder you can write to\n"


def _report_context(*args: str) -> click.Context:
    from iosim.cli.report_cmd import report_command

    return report_command.make_context("report", ["--gpu", "h100", "--out", "r", *args])


def test_remake_command_says_packing_only_with_seqlens() -> None:
    # --packing qualifies --seqlens: the remake command of a report without --seqlens carried
    # `--packing varlen`, a flag that changed nothing
    from iosim.cli.common import command_words

    plain = _report_context("--n", "2048")
    assert "--packing" not in command_words(plain, plain.params)
    packed = _report_context("--n", "3000", "--seqlens", "1000,2000", "--packing", "document")
    words = command_words(packed, packed.params)
    assert words[words.index("--packing") + 1] == "document"
    assert words[words.index("--seqlens") + 1] == "1000,2000"


def test_a_model_reports_title_names_the_model_and_layer_kind() -> None:
    # Gemma 2 9B alternates local and global layers, 21 of each (its config.json, cited in
    # configs/models/gemma-2-9b.yaml); Llama 3.1 8B has 32 layers of one kind
    from iosim.cli.report_cmd import model_subject

    gemma = _report_context("--model", "gemma-2-9b", "--layer", "local")
    assert model_subject(gemma.params) == ("Google Gemma 2 9B (one of its 21 local layers, of "
                                           "42)")
    llama = _report_context("--model", "llama-3.1-8b")
    assert model_subject(llama.params) == "Meta Llama 3.1 8B (one of its 32 layers)"
    assert model_subject(_report_context().params) is None
