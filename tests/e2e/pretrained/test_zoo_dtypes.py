"""bfloat16 and float16 runs of the shipped zoo and MiniLM specs: verdicts judged by the round-off each run measured.

A 16-bit run resolves less than a float32 one: an effect float32 sees far above the bfloat16 line must read
order-sensitive in bfloat16 too, and nothing float32 calls round-off may read order-sensitive in bfloat16 (no
verdict from noise alone)."""

from __future__ import annotations

from pathlib import Path

import pytest
from minilm import needs_minilm
from precision import Judged, judged_run

from orderlab.core import permutations as perms

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[3]
SHIPPED = ["zoo_equivariance", "zoo_causal", "minilm_dog_bites_man"]


def assert_low_precision_agrees(low: Judged, single: Judged) -> None:
    """Rows above twice the 16-bit run's line in float32 are order-sensitive in 16 bits; none is by noise alone."""
    assert (low.metrics == single.metrics).all()  # the same rows, judged in the same order
    noise_alone = low.sensitive & ~single.sensitive
    assert not noise_alone.any(), f"order-sensitive by noise alone: {low.values[noise_alone][:5]}"
    resolvable = single.values > 2 * low.lines
    missed = resolvable & ~low.sensitive
    assert not missed.any(), f"missed {missed.sum()} effects above the line: {single.values[missed][:5]}"
    assert resolvable.sum() > 0


@pytest.mark.parametrize("name", SHIPPED)
def test_shipped_specs_agree_in_bfloat16_and_float32(name, tmp_path, monkeypatch):
    needs_minilm()
    spec = (ROOT / "experiments" / f"{name}.yaml").read_text()
    single = judged_run(spec, "float32", tmp_path, monkeypatch)
    low = judged_run(spec, "bfloat16", tmp_path, monkeypatch)
    assert_low_precision_agrees(low, single)


WITHOUT_POSITIONS = """
name: computed_precision
seed: 2
model: {{kind: hf, family: {families}, d_model: 64, n_heads: 4, n_layers: {layers}, position_embeddings: [zero]}}
rows: per_permutation
inputs: [{{sentence: {sentence}, permutations: {orders}}}]
metrics: [{metric}]
"""
CAUSAL_WITHOUT_POSITIONS = WITHOUT_POSITIONS.format(families="[gpt2, llama, bloom]", layers=4,
                                                    sentence="the dog bit the man", orders="prefixes",
                                                    metric="prefix_invariance")  # fmt: skip
ENCODERS_WITHOUT_POSITIONS = WITHOUT_POSITIONS.format(families="[bert, t5, deberta]", layers=2,
                                                      sentence="the dog bit the old man", orders="{random: 40}",
                                                      metric="equivariance")  # fmt: skip


@pytest.mark.parametrize("family", ["bert", "gpt2", "llama", "bloom", "t5", "deberta"])
def test_a_float64_pass_computes_in_what_its_ops_compute_in(family):
    """Llama and T5 take their RMS norms in float32, BLOOM its softmax: their float64 passes compute in float32."""
    needs_minilm()
    import torch

    from orderlab.models.hf.loader import PretrainedBackend, Seeded
    from orderlab.models.precision import computed_dtype

    backend = PretrainedBackend(Seeded(32, 4, 2, ("dog", "bites", "man"), 0), "float64", family=family)
    ids = torch.tensor([backend.word_tokens(["dog", "bites", "man"]).ids])
    with torch.inference_mode():
        computed = computed_dtype(lambda: backend.forward(ids), torch.float64)
    assert computed == (torch.float32 if family in ("llama", "bloom", "t5") else torch.float64)


def test_float64_causal_lms_without_positions_read_prefix_invariant_at_layer_one(tmp_path, monkeypatch):
    """Seed 2, float64: the first layer's last token cannot see the order of its prefix without positions (the mask
    leaks order from the second layer on). BLOOM's float32 softmax once made 20 of its 24 rows order-sensitive at
    2e-8..5e-8, judged by float64's round-off."""
    needs_minilm()
    double = judged_run(CAUSAL_WITHOUT_POSITIONS, "float64", tmp_path, monkeypatch)
    rows = read_rows(tmp_path / "out_float64")
    first = rows[rows.layer <= 1]
    orders = perms.count("prefixes", "the dog bit the man".split())  # distinct sentences: 12 of 4! (two 'the')
    assert len(first) == 3 * 2 * orders and (first.verdict == "invariant").all(), first[first.verdict != "invariant"]
    assert double.sensitive.any()  # deeper layers, where the mask leaks order, still read order-sensitive


def test_float64_encoders_without_positions_read_equivariant(tmp_path, monkeypatch):
    needs_minilm()
    judged_run(ENCODERS_WITHOUT_POSITIONS, "float64", tmp_path, monkeypatch)
    rows = read_rows(tmp_path / "out_float64")
    assert len(rows) == 3 * 3 * 40 and (rows.verdict == "equivariant").all(), rows[rows.verdict != "equivariant"]


def read_rows(folder: Path):
    import pandas as pd

    return pd.read_csv(folder / "metrics.csv")


FAMILIES = ["bert", "gpt2", "llama", "bloom", "t5", "deberta"]


@pytest.mark.parametrize("family", FAMILIES)
def test_a_16_bit_seeded_model_holds_no_float32_copy(family, monkeypatch):
    """Every floating tensor its build makes, watched op by op: the weights are bfloat16 from the start, each draw
    made in float32 a piece at a time (models/rounded_draws.py; a piece of 4,096 numbers here, the token table's
    64,000 in 16 pieces), and no float32 tensor bigger than a piece, nor any float64 one, is ever made. The same
    build in float32 makes its token table in float32, as it always did."""
    needs_minilm()
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils._pytree import tree_leaves

    import orderlab.models.rounded_draws as rounded_draws
    from orderlab.models.hf.loader import PretrainedBackend, Seeded

    class Largest(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.numel: dict[torch.dtype, int] = {}

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            for tensor in tree_leaves(out):
                if isinstance(tensor, torch.Tensor) and tensor.is_floating_point():
                    self.numel[tensor.dtype] = max(self.numel.get(tensor.dtype, 0), tensor.numel())
            return out

    piece = 4096
    monkeypatch.setattr(rounded_draws, "PIECE", piece)
    built = {}
    for dtype in ("bfloat16", "float32"):
        with Largest() as watch:
            backend = PretrainedBackend(Seeded(64, 4, 2, ("dog", "bites", "man"), 0, vocab=1000), dtype, family=family)
        built[dtype] = watch.numel
        assert {p.dtype for p in backend.model.parameters()} == {getattr(torch, dtype)}
    assert built["bfloat16"][torch.bfloat16] >= 1000 * 64  # the token table, made in bfloat16
    assert built["bfloat16"].get(torch.float32, 0) <= piece and torch.float64 not in built["bfloat16"]
    assert built["float32"][torch.float32] >= 1000 * 64


@pytest.mark.parametrize("family", FAMILIES)
def test_a_16_bit_twin_borrows_the_weights_and_computes_as_a_float32_copy_would(family):
    needs_minilm()
    import torch

    from orderlab.models.hf.loader import PretrainedBackend, Seeded, converted_copy

    backend = PretrainedBackend(Seeded(32, 4, 2, ("dog", "bites", "man"), 1), "bfloat16", family=family)
    ids = torch.tensor([backend.word_tokens(["man", "bites", "dog"]).ids])
    twin = backend.twin("float32")
    assert twin.model is backend.model  # no copy
    with torch.inference_mode():
        borrowed = twin.forward(ids)
        twin.model, twin.widened_from = converted_copy(backend.model, torch.float32), None
        copied = twin.forward(ids)
        own = backend.forward(ids)
    for a, b, c in zip(borrowed.hidden, copied.hidden, own.hidden, strict=True):
        assert a.dtype == torch.float32 and torch.equal(a, b)
        assert c.dtype == torch.float32  # a 16-bit pass, widened for the metrics
    assert (borrowed.logits is None) == (family not in ("gpt2", "llama", "bloom"))
    assert {p.dtype for p in backend.model.parameters()} == {torch.bfloat16}  # left as it was


@pytest.mark.parametrize("family", ["gpt2", "llama"])
def test_a_twin_widens_a_vocabulary_wide_weight_a_piece_at_a_time(family, monkeypatch):
    """Above WIDEN_NUMBERS (an 8B model's LM head), a linear layer's weight is widened in pieces of output rows:
    the same numbers as widening it whole, up to the matmul's own float32 round-off."""
    needs_minilm()
    import torch

    import orderlab.models.precision as precision
    from orderlab.models.hf.loader import PretrainedBackend, Seeded

    backend = PretrainedBackend(Seeded(32, 4, 2, ("dog", "bites", "man"), 1, vocab=500), "bfloat16", family=family)
    ids = torch.tensor([backend.word_tokens(["man", "bites", "dog"]).ids])
    twin = backend.twin("float32")
    with torch.inference_mode():
        whole = twin.forward(ids)
        monkeypatch.setattr(precision, "WIDEN_NUMBERS", 100 * 32)  # pieces of 100 rows of the 500-row head
        pieces = twin.forward(ids)
    assert whole.logits is not None and pieces.logits is not None
    torch.testing.assert_close(pieces.logits, whole.logits, rtol=1e-6, atol=1e-6)
    for a, b in zip(pieces.hidden, whole.hidden, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize(("run", "finer"), [("float32", "float64"), ("float64", "float32")])
def test_a_float_twin_borrows_the_weights_for_one_pass_then_holds_a_copy_that_computes_alike(family, run, finer):
    """A float32 model's float64 twin (a float64 one's float32 twin) runs its first pass on the model's own weights,
    each read in its dtype, the sinusoidal ablation's table made from them: bit for bit the copy's numbers, which its
    second pass, on a copy of its own, computes."""
    needs_minilm()
    import torch

    from orderlab.models.hf.loader import PretrainedBackend, Seeded

    backend = PretrainedBackend(Seeded(32, 4, 2, ("dog", "bites", "man"), 1), run, family=family)
    ids = torch.tensor([backend.word_tokens(["man", "bites", "dog"]).ids])
    twin = backend.twin(finer)
    twin.set_positions("sinusoidal", 3)
    with torch.inference_mode():
        borrowed = twin.forward(ids)
        assert twin.model is backend.model  # no copy for one pass
        held = twin.forward(ids)
    assert twin.model is not backend.model and {p.dtype for p in twin.model.parameters()} == {getattr(torch, finer)}
    for a, b in zip(borrowed.hidden, held.hidden, strict=True):
        assert a.dtype == getattr(torch, finer) and torch.equal(a, b)
    assert (borrowed.logits is None) == (held.logits is None)
    assert borrowed.logits is None or torch.equal(borrowed.logits, held.logits)
    assert {p.dtype for p in backend.model.parameters()} == {getattr(torch, run)}  # left as it was
