"""An identical minimal pair is refused at validate (issue 42): it was scored as a failure (accuracy 1/2)."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from orderlab.cli import app
from orderlab.spec.extras import installed

pytestmark = pytest.mark.skipif(not installed("transformers"), reason="needs the optional extra [hf]")

SPEC = """\
name: pairs
model: {kind: hf, family: gpt2, d_model: 16, n_heads: 2, n_layers: 1}
inputs:
  - sentence: the dog bites the man
    permutations: reverse
probes:
  - {pair: [the dog bites the man, the dog bite the man], relation: minimal_pair}
  - {pair: [the  cat sleeps, the cat sleeps], relation: minimal_pair}
metrics: [minimal_pairs]
"""


def test_an_identical_minimal_pair_is_refused_by_its_line(tmp_path):
    spec = tmp_path / "pairs.yaml"
    spec.write_text(SPEC)
    result = CliRunner().invoke(app, ["validate", str(spec)])
    assert result.exit_code == 2, result.output
    assert "probes[1]" in result.output or "probes.1" in result.output, result.output
    assert "'the cat sleeps' twice; expected a sentence and its minimal counterpart" in result.output
    spec.write_text(SPEC.replace("[the  cat sleeps, the cat sleeps]", "[the cat sleeps, the cats sleeps]"))
    assert CliRunner().invoke(app, ["validate", str(spec)]).exit_code == 0
