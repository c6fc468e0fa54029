"""A spec's problems are listed whole but bounded: repeats of one problem over a list's entries are one line with
their indices and count, and a listing stops at LINES_SHOWN lines with how many more there are."""

from __future__ import annotations

from typer.testing import CliRunner

from orderlab.cli import app
from orderlab.errors import LINES_SHOWN

NAN_VECTORS = """name: nans
model: {{d_model: 16, n_heads: 2, n_layers: 1}}
embeddings:
  kind: explicit
  vectors:
    cats: {vector}
    chase: {vector}
    mice: {vector}
inputs: [{{sentence: cats chase mice, permutations: all}}]
""".format(vector="[" + ", ".join([".nan"] * 16) + "]")


def validate(tmp_path, text: str) -> list[str]:
    spec = tmp_path / "spec.yaml"
    spec.write_text(text)
    result = CliRunner().invoke(app, ["validate", str(spec)])
    assert result.exit_code == 2 and "Traceback" not in result.output, result.output
    return result.output.strip().splitlines()


def test_one_problem_repeated_over_a_vector_is_one_line_with_its_count(tmp_path):
    lines = validate(tmp_path, NAN_VECTORS)
    assert len(lines) == 3, lines  # was 48: one per NaN
    for line, word in zip(lines, ["cats", "chase", "mice"], strict=True):
        assert f"embeddings.vectors.{word}[0-15]: got nan; expected a finite number (16 entries)" in line, line


def test_a_long_listing_stops_with_how_many_more(tmp_path):
    unknown = ", ".join(f"unknown_{index}: 1" for index in range(30))  # 30 distinct problems
    lines = validate(tmp_path, f"name: many\nmodel: {{d_model: 8, n_heads: 2, {unknown}}}\n")
    assert len(lines) == LINES_SHOWN, lines
    assert lines[-1].endswith(f"and {30 - (LINES_SHOWN - 1)} more problems"), lines[-1]
