"""Every character a user can type round-trips: a sentence written into orderlab's CSVs reads back as it was given
through check, report, load and plot; cells are quoted as RFC 4180 requires (a carriage return too), a cell a
spreadsheet would run as a formula is neutralised, numbers stay numbers, and figures draw `$...$` as typed."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
import yaml
from command_line import invoke
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import orderlab.api as ol
from orderlab.results import tables
from orderlab.results.folder import write_csv


def spec_for(folder: Path, sentence: str, name: str = "typed") -> Path:
    """A spec of one sentence (with attention maps, so that figures draw its words), written by a YAML emitter."""
    path = folder / f"{name}.yaml"
    spec = {
        "name": name,
        "model": {"d_model": 4, "n_heads": 1, "n_layers": 1},
        "encodings": ["none"],
        "inputs": [{"sentence": sentence, "permutations": "reverse"}],
        "metrics": ["equivariance", "attention"],
    }
    path.write_text(yaml.safe_dump(spec))
    return path


def assert_round_trip(folder: Path, sentence: str) -> None:
    """run, then check, load, report and plot of that run: each succeeds and load gives the sentence back."""
    spec, out = spec_for(folder, sentence), folder / "out"
    run = invoke("run", spec, "--out", out, "-q")
    assert run.exit_code == 0, run.output
    assert "\x1b" not in run.output and "\x9b" not in run.output  # the terminal got text, no escape sequence
    checked = invoke("check", spec, "--out", out)
    assert checked.exit_code == 0, checked.output
    loaded = ol.load(out / "typed")
    assert set(loaded.metrics["input"]) == {sentence}
    assert set(loaded.summary["subject"]) == {sentence}
    report = invoke("report", out / "typed", "--out", folder / "report.html")
    assert report.exit_code == 0, report.output
    plot = invoke("plot", out / "typed", "--format", "png")
    assert plot.exit_code == 0, plot.output


WHITE = st.sampled_from([" ", "\t", "\r", "\n", "\r\n", "\x0b", "\x0c", "\x1c", "\x85", "\u2028", "\u3000"])
WORD = st.one_of(
    st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]).filter(lambda c: not c.isspace()), min_size=1,
            max_size=6),
    st.sampled_from(["=1+1", "-2", "+3", "@SUM(A1)", "'=x", "''-1", '"a,b"', "$\\badcommand{x}$", "$x$", "\x1b[2J",
                     "\x1b]0;title\x07", "\x9b31m", "\u202edog", "-1", "nan", "1e5"]),
)  # fmt: skip


@st.composite
def sentences(draw: st.DrawFn) -> str:
    """Two or three distinct words with any white space between and around them (a Windows line's trailing \\r
    included)."""
    words = draw(st.lists(WORD, min_size=2, max_size=3, unique_by=str.casefold))  # distinct: its reversal is another
    gaps = draw(st.lists(WHITE, min_size=len(words) + 1, max_size=len(words) + 1))
    lead, trail = draw(st.booleans()), draw(st.booleans())
    return (gaps[0] if lead else "") + "".join(w + g for w, g in zip(words, gaps[1:], strict=True))[
        : None if trail else -len(gaps[-1])
    ]


@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(sentence=sentences())
@pytest.mark.slow
def test_any_sentence_reads_back_through_check_report_load_and_plot(tmp_path_factory, sentence: str):
    assert_round_trip(tmp_path_factory.mktemp("typed"), sentence)


def test_a_sentence_ending_in_a_carriage_return_is_quoted_and_reads_back(tmp_path: Path):
    """A line of a Windows file: its \\r was written bare, and check, report and load failed on orderlab's own file."""
    assert_round_trip(tmp_path, "dog bites man\r")
    assert b'"dog bites man\r"' in (tmp_path / "out" / "typed" / "metrics.csv").read_bytes()


def test_figures_draw_mathtext_as_typed(tmp_path: Path):
    """matplotlib parses `$...$` as mathtext: an unknown command crashed run --plot, plot and report."""
    sentence = "$\\badcommand{x}$ bites $man"
    result = invoke("run", spec_for(tmp_path, sentence), "--out", tmp_path / "out", "-q", "--plot")
    assert result.exit_code == 0, result.output
    assert (tmp_path / "out" / "typed" / "figures" / "attention_none_layer1.png").is_file()
    assert_round_trip(tmp_path, sentence)


FORMULA_CELLS = {
    # given -> as written: a formula gets an apostrophe; a number, or text not starting as a formula, stays
    "=1+1": "'=1+1",
    "+A1": "'+A1",
    "-2+cmd|' /C calc'!A0": "'-2+cmd|' /C calc'!A0",
    "@SUM(A1)": "'@SUM(A1)",
    "\tx": "'\tx",
    "'=x": "''=x",
    "-1": "-1",
    "+2.5e-03": "+2.5e-03",
    "-inf": "-inf",
    "'tis": "'tis",
    "dog bites man": "dog bites man",
}


def test_formula_cells_are_neutralised_numbers_stay_numbers_and_all_read_back(tmp_path: Path):
    path = tmp_path / "cells.csv"
    frame = pd.DataFrame({"text": list(FORMULA_CELLS), "value": [-1.5] * len(FORMULA_CELLS)})
    write_csv(frame, path)
    lines = path.read_bytes().decode().split("\n")
    written = [line.rsplit(",", 1)[0] for line in lines[1:-1]]
    assert written == [f'"{cell}"' if "," in cell or '"' in cell else cell for cell in FORMULA_CELLS.values()]
    assert all(line.endswith(",-1.500000e+00") for line in lines[1:-1])  # numbers written as numbers
    back = tables.read_table(path, "a test table")
    assert list(back["text"]) == list(FORMULA_CELLS) and list(back["value"]) == [-1.5] * len(FORMULA_CELLS)
