"""MiniLM's verdicts in float32 and float64 agree wherever float32 can resolve the effect.

With a flat line of 1000 float32 epsilons (1.2e-4), real layer-0 effects of ~2e-5 read "invariant";
the measured round-off line resolves them. Cosine distances of [CLS] vectors of 3e-6 read 0 in float32 while
1 - cos cancelled; computed from the difference of unit vectors they are resolved too (issue 22).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from minilm import needs_minilm
from precision import assert_precisions_agree, judged_run

from orderlab.measure.verdicts import FLOOR
from orderlab.vocabulary.verdict_words import eps

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[3]

MINILM = """
name: minilm_precision
model: {kind: pretrained, name: minilm, position_embeddings: [trained, zero, shuffled]}
inputs:
  - sentence: the grumpy postman outperformed the dog
    permutations: {random: 6}
probes:
  - [dog bites man, man bites dog]
metrics: [equivariance, invariance, token_shift, pair_distance]
"""


def test_minilm_verdicts_agree_in_float32_and_float64(tmp_path, monkeypatch):
    needs_minilm()
    single = judged_run(MINILM, "float32", tmp_path, monkeypatch)
    double = judged_run(MINILM, "float64", tmp_path, monkeypatch)
    gained = assert_precisions_agree(single, double)
    assert gained > 0, "no effect below 1.2e-4 was resolved in float32"


def test_minilm_dog_bites_man_verdicts_agree_wherever_float64_is_above_float32s_line(tmp_path, monkeypatch):
    """The shipped experiment, as issue 22's "done when" states it: every row whose float64 value is above
    float32's measured round-off line is order-sensitive in float32 as in float64, cosine rows included. Held to
    the line's floor (FLOOR float32 eps, the least the line can be): 1 - cos in float32 carried round-off of its
    own that raised float32's measured line over three [CLS] rows of 3-4e-6, which it then read as 0."""
    needs_minilm()
    spec = (ROOT / "experiments" / "minilm_dog_bites_man.yaml").read_text()
    single = judged_run(spec, "float32", tmp_path, monkeypatch)
    double = judged_run(spec, "float64", tmp_path, monkeypatch)
    floor = FLOOR * eps("float32")
    assert (single.lines >= floor).all()
    above = double.values > floor
    assert above.sum() > 900
    assert (single.sensitive[above] & double.sensitive[above]).all(), double.values[above & ~single.sensitive][:5]
    cosine = np.char.startswith(double.metrics.astype(str), "cosine_cls") & above
    assert cosine.sum() > 0 and (single.lines[cosine] == floor).all()  # the cosine's own round-off is far below
    assert not (single.sensitive & ~double.sensitive).any()
