"""`orderlab report`, `run --html`, `compare --html` and `plot --format`: one self-contained HTML file over
results folders, real-browser rendering included, and figures in every format."""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pandas as pd
import pytest
from htmlcheck import parse
from typer.testing import CliRunner

from orderlab.cli import app
from orderlab.report.figures import metrics_by_layer

ROOT = Path(__file__).resolve().parents[3]
RESULTS = ROOT / "results"
SIZE_BOUND = 2_000_000  # bytes: dog_bites_man's report is ~0.6 MB, nearly all of it inline SVG
CHROMIUM = shutil.which("chromium")
CHROMIUM_FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--host-resolver-rules=MAP * ~NOTFOUND",  # anything the page tried to fetch would fail and log an error
    "--enable-logging=stderr", "--v=0", "--window-size=1200,900",
]  # fmt: skip

runner = CliRunner()


def report(*args: str) -> tuple[int, str]:
    result = runner.invoke(app, ["report", *args])
    return result.exit_code, result.output


@pytest.fixture(scope="module")
def flagship(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The report of the shipped dog_bites_man results, written once for this module."""
    out = tmp_path_factory.mktemp("report") / "report.html"
    code, output = report(str(RESULTS / "dog_bites_man"), "--out", str(out))
    assert code == 0, output
    assert re.fullmatch(rf"wrote {re.escape(str(out))} in \d+\.\d s\n", output), output  # and its wall time
    return out


@pytest.mark.slow
def test_report_is_one_self_contained_page_within_the_size_bound(flagship: Path):
    text = flagship.read_text(encoding="utf-8")
    page = parse(text)
    assert len(text.encode()) < SIZE_BOUND
    assert page.tags.get("link", 0) == 0 and page.tags["script"] == 1  # the one inline script; no stylesheet link
    assert page.tags["svg"] == 2 + 3 * 2  # metrics by layer and by displacement, every head of 3 encodings x 2 layers


@pytest.mark.slow
def test_report_shows_verdict_colours_figures_spec_and_manifest(flagship: Path):
    text = flagship.read_text(encoding="utf-8")
    assert '<td class="ok" data-sort="0.0">≈0 ✓</td>' in text  # none: equivariant within round-off
    assert '<td class="bad" data-sort="0.2521087">2.5e-01 ✗</td>' in text  # sinusoidal equivariance, summary.csv
    assert text.count("P = [0 2 1]: “dog bites man” → “dog man bites”") == 6  # the permutation in every attention grid
    for metric in ("worst equivariance (log)", "worst pair_cosine (log)"):  # y-labels name their metric
        assert metric in text
    spec = (ROOT / "experiments" / "dog_bites_man.yaml").read_text()
    assert spec.splitlines()[0] in html.unescape(text) and "sha256 as recorded" in text
    assert '"sha256": "f54bd7694728' in html.unescape(text)  # the manifest, verbatim


@pytest.mark.parametrize(
    ("folder", "tables", "figures"),
    [
        ("minilm_corpus", ["sentences.csv", "summary.csv"], 1),  # corpus mode: similarity by sentence length
        ("minilm_dog_bites_man", ["summary.csv"], 2),  # pretrained: metrics by layer and by displacement, no attention
        ("properties", ["properties.csv"], 0),  # written by `orderlab properties`
        ("residual_position", ["summary.csv"], 2),  # a sweep with the position probe: its decodability curve
    ],
)
def test_other_kinds_of_results_folder_render_what_they_hold(tmp_path: Path, folder: str, tables: list[str],
                                                             figures: int):  # fmt: skip
    out = tmp_path / "report.html"
    code, output = report(str(RESULTS / folder), "--out", str(out))
    assert code == 0, output
    text = out.read_text(encoding="utf-8")
    page = parse(text)
    assert [name for name in ("properties.csv", "sentences.csv", "summary.csv") if f"<h3>{name}</h3>" in text] == tables
    assert page.tags.get("svg", 0) == figures


def test_several_folders_make_one_page_with_a_section_each(tmp_path: Path):
    out = tmp_path / "both.html"
    code, output = report(str(RESULTS / "worked_example"), str(RESULTS / "properties"), "--out", str(out))
    assert code == 0, output
    text = out.read_text(encoding="utf-8")
    parse(text)
    assert '<a href="#folder-0">worked_example</a><a href="#folder-1">properties</a>' in text


def test_report_writes_only_its_output_file(tmp_path: Path):
    folder = tmp_path / "worked_example"
    shutil.copytree(RESULTS / "worked_example", folder)
    before = {path: path.stat().st_mtime_ns for path in tmp_path.rglob("*")}
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "notes.txt").write_text("mine")
    code, output = report(str(folder), "--out", str(tmp_path / "out" / "report.html"))
    assert code == 0, output
    assert sorted(os.listdir(tmp_path / "out")) == ["notes.txt", "report.html"]  # no staging file left behind
    assert {path: path.stat().st_mtime_ns for path in before} == before


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda p: p, "not an orderlab results folder; expected a folder with manifest.json"),
        (lambda p: p / "missing", "not an orderlab results folder"),
        (lambda p: (p / "manifest.json").write_text("{oops") and p, "manifest.json: not valid JSON"),
        (lambda p: (p / "manifest.json").write_text("{}") and p, "no CSV that orderlab writes"),
    ],
)
def test_a_folder_orderlab_did_not_write_is_one_line_and_exit_2(tmp_path: Path, make, message: str):
    folder = make(tmp_path)
    code, output = report(str(folder), "--out", str(tmp_path / "report.html"))
    assert code == 2
    assert output.startswith("error: ") and message in output and output.count("\n") == 1
    assert not (tmp_path / "report.html").exists()


def test_an_out_that_is_a_folder_is_refused_in_one_line(tmp_path: Path):
    code, output = report(str(RESULTS / "worked_example"), "--out", str(tmp_path))
    assert code == 2
    assert output == f"error: --out {tmp_path}: is a folder; expected a file path such as {tmp_path}/report.html\n"


@pytest.mark.parametrize("name", ["manifest.json", "metrics.csv", "summary.csv", "attention.csv"])
def test_an_out_that_is_a_file_of_a_folder_the_report_reads_is_refused_and_left(tmp_path: Path, name: str):
    folder = tmp_path / "worked_example"
    shutil.copytree(RESULTS / "worked_example", folder)
    before = {path: path.read_bytes() for path in folder.iterdir()}
    code, output = report(str(folder), "--out", str(folder / name))
    assert code == 2
    assert output == (
        f"error: --out {folder / name}: is a file in {folder}, which this command reads; expected another file; "
        "nothing was written\n"
    )
    assert {path: path.read_bytes() for path in folder.iterdir()} == before


def test_a_report_orderlab_wrote_into_a_folder_may_be_rewritten_from_it(tmp_path: Path):
    folder = tmp_path / "worked_example"
    shutil.copytree(RESULTS / "worked_example", folder)
    assert report(str(folder), "--out", str(folder / "report.html"))[0] == 0
    code, output = report(str(folder), "--out", str(folder / "report.html"))
    assert code == 0, output
    (folder / "report.html").write_text("<p>my own notes</p>")  # not orderlab's: a file of the folder read
    code, output = report(str(folder), "--out", str(folder / "report.html"))
    assert code == 2 and "is a file in" in output
    assert (folder / "report.html").read_text() == "<p>my own notes</p>"


def test_run_html_writes_the_report_into_the_run_folder_and_reruns_replace_it(tmp_path: Path):
    spec, written = str(ROOT / "experiments" / "worked_example.yaml"), tmp_path / "worked_example" / "report.html"
    result = runner.invoke(app, ["run", spec, "--out", str(tmp_path), "--html"])
    assert result.exit_code == 0, result.output
    assert f"wrote {written}" in result.output
    parse(written.read_text(encoding="utf-8"))
    rerun = runner.invoke(app, ["run", spec, "--out", str(tmp_path), "-q"])  # replaces a folder holding the report
    assert rerun.exit_code == 0, rerun.output
    assert not written.exists()  # the run's folder was replaced whole: no report of the previous run stays
    written.write_text("<p>my own notes</p>")  # not orderlab's
    refused = runner.invoke(app, ["run", spec, "--out", str(tmp_path), "-q"])
    assert refused.exit_code == 2
    assert "holds report.html, which orderlab did not write" in refused.output


def test_compare_html_writes_the_side_by_side_table(tmp_path: Path):
    out = tmp_path / "compare.html"
    result = runner.invoke(app, ["compare", "-e", "none,sinusoidal", str(ROOT / "experiments" / "worked_example.yaml"),
                                 "--out", str(tmp_path), "--html", str(out), "-q"])  # fmt: skip
    assert result.exit_code == 0, result.output
    text = out.read_text(encoding="utf-8")
    parse(text)
    assert "<title>compare: none, sinusoidal</title>" in text and "<h3>compare.csv</h3>" in text
    assert "<th>none</th><th>sinusoidal</th>" in text and "✗</td>" in text


@pytest.mark.parametrize(("file_format", "magic"), [("svg", b"<?xml"), ("pdf", b"%PDF-"), ("png", b"\x89PNG")])
def test_plot_writes_every_figure_in_the_format_asked(tmp_path: Path, file_format: str, magic: bytes):
    folder = tmp_path / "worked_example"
    shutil.copytree(RESULTS / "worked_example", folder)
    result = runner.invoke(app, ["plot", str(folder), "--format", file_format])
    assert result.exit_code == 0, result.output
    names = sorted(path.name for path in (folder / "figures").iterdir() if path.name != "manifest.json")
    stems = ["attention_none_layer1", "attention_sinusoidal_layer1", "metrics_by_displacement", "metrics_by_layer"]
    assert names == [f"{stem}.{file_format}" for stem in stems]
    assert all((folder / "figures" / name).read_bytes().startswith(magic) for name in names)


# --- a real browser ----------------------------------------------------------------------------------


def render(page: Path, tmp_path: Path) -> tuple[bytes, list[str]]:
    """Headless Chromium's screenshot of a page, and the lines it logged from the page's console."""
    shot = tmp_path / "shot.png"
    command = [CHROMIUM or "chromium", *CHROMIUM_FLAGS, f"--user-data-dir={tmp_path / 'profile'}",
               f"--screenshot={shot}", page.as_uri()]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    return shot.read_bytes(), [line for line in done.stderr.splitlines() if ":CONSOLE" in line]


needs_chromium = pytest.mark.skipif(
    CHROMIUM is None, reason="chromium is not installed (apt-get install chromium; .ci/run installs it)"
)


@needs_chromium
@pytest.mark.slow
def test_chromium_console_lines_are_caught(tmp_path: Path):
    page = tmp_path / "broken.html"
    page.write_text(
        '<!DOCTYPE html><script>console.error("boom"); missing();</script><img src="https://x.invalid/a.png">'
    )
    _, console = render(page, tmp_path)
    assert any('"boom"' in line for line in console) and any("missing is not defined" in line for line in console)


@needs_chromium
@pytest.mark.slow
def test_report_renders_in_headless_chromium_without_console_errors(flagship: Path, tmp_path: Path):
    screenshot, console = render(flagship, tmp_path)
    assert screenshot.startswith(b"\x89PNG\r\n\x1a\n") and len(screenshot) > 20_000  # drawn, not a blank page
    assert console == []


# Run in the page once it is laid out; writes what it measured into <pre id="layout">, which --dump-dom prints.
LAYOUT_PROBE = """<script>
(function () {
  "use strict";
  function lines(element) {  // how many lines of text the element's content takes
    var range = document.createRange();
    range.selectNodeContents(element);
    var tops = {};
    Array.prototype.forEach.call(range.getClientRects(), function (r) {
      if (r.width > 0) { tops[Math.round(r.top)] = 1; }
    });
    return Object.keys(tops).length;
  }
  var found = {page: document.documentElement.scrollWidth - window.innerWidth, boxes: [], split: [], clipped: []};
  document.querySelectorAll(".scroll").forEach(function (box) {
    found.boxes.push({right: box.getBoundingClientRect().right - window.innerWidth,
                      wide: box.scrollWidth > box.clientWidth, overflow: getComputedStyle(box).overflowX});
  });
  document.querySelectorAll("td.ok, td.bad, td.nonfinite").forEach(function (cell) {
    if (lines(cell) > 1) { found.split.push(cell.textContent); }
  });
  document.querySelectorAll("figure svg").forEach(function (svg) {
    var outer = svg.getBoundingClientRect(), slack = 0.01 * outer.width;
    svg.querySelectorAll("text").forEach(function (text) {
      var r = text.getBoundingClientRect();
      if (r.width > 0 && (r.left < outer.left - slack || r.right > outer.right + slack || r.top < outer.top - slack)) {
        found.clipped.push(text.textContent);
      }
    });
  });
  var out = document.createElement("pre");
  out.id = "layout";
  out.textContent = JSON.stringify(found);
  document.body.appendChild(out);
}());
</script>"""


def laid_out(page: Path, width: int, tmp_path: Path) -> dict[str, object]:
    """What LAYOUT_PROBE measured in headless Chromium with a window `width` pixels wide."""
    probed = tmp_path / f"probed-{page.name}"
    probed.write_text(page.read_text(encoding="utf-8").replace("</body>", LAYOUT_PROBE + "</body>"), encoding="utf-8")
    flags = [flag for flag in CHROMIUM_FLAGS if not flag.startswith("--window-size")]
    command = [CHROMIUM or "chromium", *flags, f"--window-size={width},900", f"--user-data-dir={tmp_path / 'profile'}",
               "--dump-dom", probed.as_uri()]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    measured = re.search(r'<pre id="layout">(.*?)</pre>', done.stdout, re.S)
    assert measured, done.stdout[-2000:]
    return json.loads(html.unescape(measured.group(1)))


@pytest.fixture(scope="module")
def layout_pages(flagship: Path, tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """Reports whose layout went wrong (issue 24): wide corpus tables, a 2-head attention figure, the flagship."""
    pages = [flagship]
    for name in ("minilm_corpus", "causal_prefix"):
        out = tmp_path_factory.mktemp(name) / f"{name}.html"
        code, output = report(str(RESULTS / name), "--out", str(out))
        assert code == 0, output
        pages.append(out)
    return pages


@needs_chromium
@pytest.mark.slow
def test_report_layout_holds_at_narrow_and_wide_windows(layout_pages: list[Path], tmp_path: Path):
    """Both widths in one test: the pages are written once (a parametrised pair ran on both xdist workers, each
    writing the three reports anew)."""
    for width in (700, 1400):
        for page in layout_pages:
            found = laid_out(page, width, tmp_path)
            where = (page.name, width)
            assert found["page"] <= 1, (*where, "the page itself scrolls sideways")
            assert found["boxes"], where
            for box in found["boxes"]:
                assert box["right"] <= 1 and box["overflow"] in ("auto", "scroll"), (*where, box)
            if page.stem == "minilm_corpus":
                assert any(box["wide"] for box in found["boxes"]), "expected the corpus tables to need scrolling"
            assert found["split"] == [], (*where, "a value wrapped apart from its mark", found["split"][:5])
            assert found["clipped"] == [], (*where, "figure text cut off at the figure's edge", found["clipped"][:5])


def test_the_legend_of_metrics_by_layer_is_readable_and_above_the_panels_too():
    rows = [{"case": "permutation", "encoding": encoding, "layer": layer, "metric": metric, "value": 0.1}
            for encoding in ("none", "rope") for layer in (0, 1)
            for metric in ("equivariance", "attention_equivariance")]  # fmt: skip
    figure = metrics_by_layer(pd.DataFrame(rows), [], "legend", "float64")
    figure.draw_without_rendering()  # lays the figure out (constrained layout)
    above, below = sorted(figure.legends, key=lambda legend: -legend.get_window_extent().y0)
    panels = [ax.get_window_extent() for ax in figure.axes]
    assert above.get_window_extent().y0 >= max(panel.y1 for panel in panels)  # over every panel
    assert below.get_window_extent().y1 <= min(panel.y0 for panel in panels)
    assert all(text.get_fontsize() >= 11 for legend in (above, below) for text in legend.get_texts())


def test_sweep_lines_with_equal_values_are_drawn_apart_with_their_own_markers():
    rows = [{"case": "permutation", "encoding": "none", "causal": causal, "layer": layer, "metric": "equivariance",
             "value": 0.0} for causal in (False, True) for layer in (0, 1, 2)]  # fmt: skip
    figure = metrics_by_layer(pd.DataFrame(rows), ["causal"], "sweep", "float64")
    first, second = figure.axes[0].get_lines()
    assert first.get_ydata().tolist() == second.get_ydata().tolist()  # the same values ...
    assert set(first.get_xdata()).isdisjoint(second.get_xdata())  # ... side by side, not on top of each other
    assert first.get_marker() != second.get_marker() and first.get_linestyle() != second.get_linestyle()
    assert figure.axes[0].get_ylabel() == "worst equivariance (log)"


def test_an_out_that_is_the_spec_the_report_shows_is_refused_and_the_spec_left(tmp_path: Path):
    spec = tmp_path / "tiny.yaml"
    spec.write_text("model: {d_model: 8, n_heads: 2, n_layers: 1}\nencodings: [none]\ninputs: [{sentence: a b}]\n")
    assert runner.invoke(app, ["run", str(spec), "--out", str(tmp_path / "results"), "--quiet"]).exit_code == 0
    before = spec.read_bytes()
    code, output = report(str(tmp_path / "results" / "tiny"), "--out", str(spec))
    assert code == 2
    assert (
        output
        == f"error: --out {spec}: is a file this command reads ({spec}); expected another file; nothing was written\n"
    )
    assert spec.read_bytes() == before


def test_the_reordering_shown_by_default_changes_the_sentence(tmp_path: Path):
    """issue 24: swapping the two "the" moves slots but reads the same; the figures show the first that reads
    differently (here the third), and the manifest names it."""
    spec = tmp_path / "the_the.yaml"
    spec.write_text(
        "name: the_the\nmodel: {d_model: 8, n_heads: 2, n_layers: 1}\nencodings: [rope]\n"
        "inputs:\n  - sentence: the cat saw the dog\n"
        "    permutations: [[0, 1, 2, 3, 4], [3, 1, 2, 0, 4], [0, 4, 2, 3, 1]]\n"
        "metrics: [attention]\n"
    )
    result = runner.invoke(app, ["run", str(spec), "--out", str(tmp_path), "-q"])
    assert result.exit_code == 0, result.output
    shown = json.loads((tmp_path / "the_the" / "manifest.json").read_text())["attention"]["reorderings"]
    assert shown == [{"permutation": "0 4 2 3 1", "permuted": "the dog saw the cat"}]


def test_every_shipped_attention_figure_shows_a_changed_sentence():
    for manifest in sorted(RESULTS.glob("*/manifest.json")):
        attention = json.loads(manifest.read_text()).get("attention")
        for reordering in (attention or {}).get("reorderings", []):
            assert reordering["permuted"] != attention["words"], manifest


def test_a_rate_reads_as_a_share_with_its_count_as_on_the_console(tmp_path: Path):
    out = tmp_path / "report.html"
    code, output = report(str(RESULTS / "zoo_causal"), "--out", str(out))
    assert code == 0, output
    page = out.read_text()
    summary = pd.read_csv(RESULTS / "zoo_causal" / "summary.csv", keep_default_na=False)
    rate = summary[(summary["metric"] == "permutation_preferred") & (summary["family"] == "gpt2")].iloc[0]
    value, count = float(rate["seeded"]), int(rate["permutations"])  # blank cells elsewhere: read as text
    shown = f"{value:.2f} ({round(value * count)}/{count})"
    assert shown in page
    assert f"{value:.1e} ✗" not in page


def test_report_without_out_writes_into_the_runs_folder_never_the_current_one(tmp_path: Path, monkeypatch):
    folder = tmp_path / "results" / "worked_example"
    shutil.copytree(RESULTS / "worked_example", folder)
    monkeypatch.chdir(tmp_path)
    code, output = report(str(folder))
    assert code == 0, output
    assert (folder / "report.html").is_file() and not (tmp_path / "report.html").exists()
    code, output = report(str(folder), str(RESULTS / "properties"))
    assert code == 2 and "expected --out FILE.html" in output, output
    assert not (tmp_path / "report.html").exists()
