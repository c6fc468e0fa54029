"""What the shipped figures show, read back from the drawn Figure objects: every log axis labels its ticks as numbers
(a mathtext switch once turned each into '$\\mathdefault{10^{-16}}$'), and a user's `$x$` stays as typed."""

from __future__ import annotations

from pathlib import Path

import pytest

from orderlab.report.figures import drawings, has_figures, power_of_ten, read_results

ROOT = Path(__file__).resolve().parents[3]
SHIPPED = sorted(path.name for path in (ROOT / "results").iterdir() if has_figures(path))
FROM_SUPERSCRIPT = str.maketrans("⁻⁰¹²³⁴⁵⁶⁷⁸⁹", "-0123456789")


def as_number(label: str) -> float:
    """A tick label's value: '10⁻¹⁶' as 1e-16, '0.05' as itself; ValueError for anything else (mathtext source)."""
    if label.startswith("10") and len(label) > 2 and label[2] in "⁻⁰¹²³⁴⁵⁶⁷⁸⁹":
        return 10.0 ** int(label[2:].translate(FROM_SUPERSCRIPT))
    return float(label.replace("−", "-"))


def test_a_decade_reads_as_ten_to_its_power():
    assert [power_of_ten(value) for value in (1e-16, 1e-2, 1.0, 100.0)] == ["10⁻¹⁶", "10⁻²", "1", "10²"]
    assert power_of_ten(3e-5) == "" and power_of_ten(0.0) == ""  # only decades carry a label
    assert as_number("10⁻¹⁶") == pytest.approx(1e-16)


@pytest.mark.slow
@pytest.mark.parametrize("name", SHIPPED)
def test_every_log_axis_of_a_shipped_figure_labels_its_ticks_as_numbers(name):
    folder = ROOT / "results" / name
    log_axes = 0
    for drawing in drawings(folder, read_results(folder)):
        logs = [ax for ax in drawing.figure.axes if ax.get_visible() and ax.get_yscale() == "log"]
        if logs:  # (the scale is set when drawn; only the labels wait for a draw)
            drawing.figure.draw_without_rendering()  # tick labels as a saved file has them
        for ax in logs:
            log_axes += 1
            low, high = ax.get_ylim()
            labels = [tick.label1.get_text() for tick in ax.yaxis.get_major_ticks() if low <= tick.get_loc() <= high]
            shown = [label for label in labels if label]
            assert len(shown) >= 2, (name, ax.get_title(), labels)
            for label in shown:
                assert "$" not in label and "\\" not in label, (name, ax.get_title(), label)
                assert as_number(label) > 0, label  # a number a reader can read
    if name == "dog_bites_man":
        assert log_axes == 16  # 9 by layer, 7 by displacement: most span 100x or more, once "$\\mathdefault{10^{-16}}$"
