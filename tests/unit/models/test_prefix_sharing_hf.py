"""Causal prefix sharing for the zoo's causal LMs: each distinct word prefix of a chunk run once through the model's
KV cache gives the dense pass's word states, pooled means and log-probabilities, whatever the chunk."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pandas as pd
import pytest
import torch

from orderlab.cli import app
from orderlab.core.hook_points import hook_name, pattern_points
from orderlab.families import FAMILIES
from orderlab.measure.adapters import build_adapters
from orderlab.measure.run_options import RunOptions
from orderlab.measure.sweep_measure import run_sweep
from orderlab.models.devices import CPU
from orderlab.models.hf import slot_cache
from orderlab.models.hf.grouping import WordTokens
from orderlab.models.kv_prefix import one_token_words
from orderlab.models.prefix_trie import trie_depths
from orderlab.plan.chunks import PRETRAINED_CHUNK, ROW_ALIGNMENT, SHARED_PREFIX_CHUNK
from orderlab.plan.decisions import Decisions
from orderlab.spec.extras import installed
from orderlab.spec.schema import Spec

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not installed("transformers"), reason="needs the optional extra: orderlab[hf]"),
    pytest.mark.usefixtures("one_thread"),  # the equalities hold at any thread count
]
CAUSAL = [family.name for family in FAMILIES.values() if family.causal]
CASES = [(family, ablation) for family in CAUSAL for ablation in FAMILIES.get(family).cached_ablations]
WORDS = ["the", "dog", "bit", "a", "man"]
ORDERS = torch.tensor(list(itertools.permutations(range(len(WORDS)))))  # 120, in label order
TOLERANCE = {"float64": 1e-12, "float32": 1e-5}  # relative to each tensor's largest magnitude


def zoo_spec(
    family: str, ablations: list[str], dtype: str = "float32", metrics: tuple[str, ...] = (), words: list[str] = WORDS
) -> Spec:
    return Spec.model_validate({
        "model": {"kind": "hf", "family": family, "d_model": 32, "n_heads": 2, "n_layers": 2, "dtype": dtype,
                  "position_embeddings": ablations},
        "inputs": [{"sentence": " ".join(words), "permutations": "all"}],
        "metrics": list(metrics or ("equivariance", "invariance", "lm_logprob")),
    })  # fmt: skip


def sentences(family: str, ablation: str, dtype: str, metrics: tuple[str, ...] = ()):
    """The sentence bound to the shared-prefix adapter and to the dense one of the same model."""
    spec = zoo_spec(family, [ablation], dtype, metrics)
    shared, dense = (build_adapters(spec, CPU, Path("spec.yaml"), decisions=Decisions(s, compile=False))[0]
                     for s in (True, False))  # fmt: skip
    return shared.sentence(WORDS), dense.sentence(WORDS)


def assert_close(got: torch.Tensor, expected: torch.Tensor, dtype: str) -> None:
    scale = expected.abs().max().item()
    torch.testing.assert_close(got, expected, rtol=TOLERANCE[dtype], atol=TOLERANCE[dtype] * scale)


@pytest.mark.parametrize(("family", "ablation"), CASES)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_shared_pass_equals_the_dense_pass_for_every_causal_family_and_ablation(family, ablation, dtype):
    shared, dense = sentences(family, ablation, dtype)
    assert shared.shares_prefixes and not dense.shares_prefixes
    with torch.inference_mode():
        expected = dense.forward(ORDERS)
        for start in range(0, len(ORDERS), 50):  # chunks that split the trie below its first level
            rows = slice(start, start + 50)
            got = shared.forward(ORDERS[rows])
            for layer in range(len(got.hidden)):
                assert_close(got.hidden[layer], expected.hidden[layer][rows], dtype)
                assert_close(got.pooled["mean"][layer], expected.pooled["mean"][layer][rows], dtype)
            assert_close(got.logprob, expected.logprob[rows], dtype)
            assert got.hooks == {}


def test_every_ablation_of_a_causal_family_shares_and_no_encoder_does():
    for family in FAMILIES.values():
        declared = set(family.cached_ablations)
        assert declared == (set(family.ablations) if family.causal else set()), family.name


@pytest.mark.parametrize("family", CAUSAL)
def test_the_shared_pass_feeds_each_distinct_prefix_once(family):
    shared, _ = sentences(family, "trained", "float32")
    backend = shared.adapter.backend
    fed: list[int] = []
    handle = backend.model.get_input_embeddings().register_forward_hook(
        lambda _m, args, _out: fed.append(args[0].numel())
    )
    try:
        with torch.inference_mode():
            shared.forward(ORDERS)
    finally:
        handle.remove()
    prefixes = [
        len(depth.word) for depth in trie_depths(ORDERS, ROW_ALIGNMENT)
    ]  # distinct prefixes, padded to row tiles
    assert fed == [ROW_ALIGNMENT, *prefixes]  # BOS once (one row tile), then one token per prefix and depth
    assert sum(fed) < len(ORDERS) * (len(WORDS) + 1) * 0.6  # the dense pass feeds 720 tokens


@pytest.mark.parametrize("family", CAUSAL)
def test_shared_results_do_not_depend_on_the_chunk_size(family):
    spec = zoo_spec(family, list(FAMILIES.get(family).cached_ablations), words=WORDS[:4])
    whole = run_sweep(spec, RunOptions(chunk_size=24)).metrics
    for chunk_size in (5, 11):
        pd.testing.assert_frame_equal(
            run_sweep(spec, RunOptions(chunk_size=chunk_size)).metrics, whole, check_exact=True
        )


def test_attention_maps_come_from_the_dense_pass_and_points_read_per_token_from_the_walk():
    shared, dense = sentences("llama", "trained", "float64", metrics=("attention", "invariance"))
    request = [hook_name(layer, "output") for layer in (1, 2)]
    with torch.inference_mode():
        maps = pattern_points(2)
        with_maps, with_hooks = shared.forward(ORDERS[:8], maps), shared.forward(ORDERS[:8], hooks=request)
        expected = dense.forward(ORDERS[:8], maps + request)
    assert len(with_maps.patterns()) == 2 and set(with_hooks.hooks) == set(request) and not with_hooks.patterns()
    for layer, states in enumerate(expected.hidden):
        assert torch.equal(with_maps.hidden[layer], states)  # bit for bit: the same dense pass
    for name in request:  # the walk's (models/walk_points.py), to round-off
        assert_close(with_hooks.hooks[name], expected.hooks[name], "float64")


@pytest.mark.parametrize(
    ("request_", "path"),
    [
        ([], "shared"),
        (["1.q", "1.attn_out", "2.mid", "2.mlp_out", "logits"], "shared"),  # read per token: the walk's own calls
        (["1.pattern"], "dense, eager attention"),  # only eager attention returns the probabilities
    ],
)  # fmt: skip
def test_a_family_s_pass_leaves_its_fast_path_only_for_points_the_fast_path_cannot_form(request_, path, monkeypatch):
    from orderlab.models.hf.loader import PretrainedBackend
    from orderlab.models.pretrained import PretrainedSentence

    shared, _ = sentences("llama", "trained", "float64", metrics=("attention", "invariance"))  # built eager
    taken: list[str] = []
    walk, forward = PretrainedSentence.shared_prefixes, PretrainedBackend.forward
    monkeypatch.setattr(PretrainedSentence, "shared_prefixes", lambda *a: taken.append("shared") or walk(*a))
    monkeypatch.setattr(PretrainedBackend, "forward", lambda self, ids, attention=False, points=(), logits=True:
                        taken.append("dense, eager attention" if attention else "dense")
                        or forward(self, ids, attention, points, logits))  # fmt: skip
    with torch.inference_mode():
        passed = shared.forward(ORDERS[:4], request_)
    assert taken[0] == path and set(passed.hooks) == set(request_)


def test_words_of_several_tokens_or_tokens_after_the_words_are_no_trie_edges():
    assert one_token_words(WordTokens((2, 7, 8, 9), ((1, 2), (2, 3), (3, 4))))
    assert not one_token_words(WordTokens((2, 7, 8, 9), ((1, 3), (3, 4))))  # a word of two tokens
    assert not one_token_words(WordTokens((2, 7, 8, 3), ((1, 2), (2, 3))))  # an end-of-sentence token
    assert not one_token_words(WordTokens((7, 8), ((0, 1), (1, 2))))  # no BOS


def run_manifest(
    cli, write_spec, tmp_path, model: str, metrics: str = "[invariance]", shape: str = "d_model: 16, n_heads: 2, "
) -> dict:
    spec = write_spec(
        f"name: kv\nmodel: {{kind: hf, {shape}{model}}}\n"
        f"inputs: [{{sentence: a b c d, permutations: all}}]\nmetrics: {metrics}\n"
    )
    result = cli.invoke(app, ["run", str(spec), "--out", str(tmp_path / "out"), "--quiet"])
    assert result.exit_code == 0, result.output
    return json.loads((tmp_path / "out/kv/manifest.json").read_text())


def test_the_manifest_says_each_causal_ablation_shares_prefixes(cli, write_spec, tmp_path):
    manifest = run_manifest(cli, write_spec, tmp_path, "family: gpt2, position_embeddings: [trained, zero, shuffled]")
    assert manifest["prefix_sharing"] == {"seeded": "shared", "zero": "shared", "shuffled": "shared"}  # by label


def test_attention_maps_run_dense_and_the_manifest_says_so(cli, write_spec, tmp_path):
    manifest = run_manifest(cli, write_spec, tmp_path, "family: [bloom, bert]", metrics="[attention, invariance]")
    note = "dense: attention maps asked for (the attention metric); cached passes do not return them"
    assert manifest["prefix_sharing"] == {"bloom/seeded": note, "bloom/zero": note}  # the encoder has no entry


def test_a_checkpoint_shares_only_sentences_of_one_token_words_and_the_manifest_says_so(cli, write_spec, tmp_path):
    saved = build_adapters(zoo_spec("gpt2", ["trained"], words=["a", "b", "c", "d"]), CPU, Path("spec.yaml"))[0].backend
    saved.model.save_pretrained(tmp_path / "model")
    saved.tokenizer.save_pretrained(tmp_path / "model")
    manifest = run_manifest(cli, write_spec, tmp_path, f"family: gpt2, path: {tmp_path / 'model'}, "
                            "position_embeddings: trained", shape="")  # fmt: skip
    assert manifest["prefix_sharing"] == {
        "trained": "shared for sentences whose every word is one token; dense for the others"
    }


def test_encoders_record_no_prefix_sharing(cli, write_spec, tmp_path):
    assert "prefix_sharing" not in run_manifest(cli, write_spec, tmp_path, "family: bert")


@pytest.mark.parametrize("family", CAUSAL)
def test_the_round_off_twin_runs_dense_in_the_other_precision_with_the_same_weights(family: str) -> None:
    """The twin's identity pass is one dense call (not one per token). It borrows the model until it holds a copy
    (PretrainedBackend.reading); the copy's weights are the model's, cast, in storage of their own, tied ones still
    tied: as copy.deepcopy(model).to(float64) would give, without the float32 copy."""
    adapter = build_adapters(zoo_spec(family, ["trained"]), CPU, Path("spec.yaml"))[0]
    twin = adapter.twin()
    assert adapter.shares_prefixes and not twin.shares_prefixes
    assert not twin.sentence(WORDS).shares_prefixes
    assert twin.shared.backend.model is adapter.shared.backend.model
    twin.shared.backend.hold_copy()
    model, copied = adapter.shared.backend.model, twin.shared.backend.model
    expected = {name: t.double() if t.is_floating_point() else t for name, t in model.state_dict().items()}
    got = copied.state_dict()
    assert got.keys() == expected.keys()
    for name, tensor in got.items():
        assert tensor.dtype == expected[name].dtype and torch.equal(tensor, expected[name]), name
    storages = {t.untyped_storage().data_ptr() for t in [*model.parameters(), *model.buffers()]}
    assert not storages & {t.untyped_storage().data_ptr() for t in [*copied.parameters(), *copied.buffers()]}
    tied = model.get_output_embeddings().weight is model.get_input_embeddings().weight
    assert (copied.get_output_embeddings().weight is copied.get_input_embeddings().weight) == tied


def test_a_float32_models_finer_model_holds_the_copy_its_twin_then_shares() -> None:
    """Escalation walks every escalated chunk in float64: the finer model holds a copy (no weight converted again at
    each call), made once and shared with the twin's own passes."""
    adapter = build_adapters(zoo_spec("gpt2", ["trained"]), CPU, Path("spec.yaml"))[0]
    twin, finer = adapter.twin(), adapter.finer()
    model = adapter.shared.backend.model
    assert finer.shared.backend.model is twin.shared.backend.model is not model
    assert {p.dtype for p in finer.shared.backend.model.parameters()} == {torch.float64}


@pytest.mark.parametrize("family", CAUSAL)
def test_a_16_bit_models_finer_model_walks_in_float32_to_the_dense_float32_numbers(family: str) -> None:
    """Escalated orders (Adapter.finer) walk shared prefixes on the run's row tiles, each borrowed bfloat16 weight
    widened as in the dense twin's passes: float32's numbers to float32's round-off, not bfloat16's."""
    adapter = build_adapters(zoo_spec(family, ["trained"], "bfloat16"), CPU, Path("spec.yaml"))[0]
    finer, twin = adapter.finer(), adapter.twin()
    assert finer.sentence(WORDS).shares_prefixes and not twin.shares_prefixes
    assert finer.shared.backend.row_alignment == adapter.shared.backend.row_alignment
    assert finer.shared.backend.model is adapter.shared.backend.model  # borrowed, never copied
    with torch.inference_mode():
        walked, dense = finer.sentence(WORDS).forward(ORDERS), twin.sentence(WORDS).forward(ORDERS)
    for a, b in [*zip(walked.hidden, dense.hidden, strict=True), (walked.logprob, dense.logprob)]:
        assert a.dtype == torch.float32 and float((a - b).abs().max()) <= TOLERANCE["float32"] * float(b.abs().max())


def test_a_shared_prefix_pass_takes_as_many_orders_as_its_budget_holds_and_a_dense_one_keeps_its_chunk():
    spec = zoo_spec("gpt2", ["trained"])
    shared = build_adapters(spec, CPU, Path("spec.yaml"))[0]
    dense = build_adapters(spec, CPU, Path("spec.yaml"), decisions=Decisions(False, compile=False))[0]
    encoder = build_adapters(zoo_spec("bert", ["trained"], metrics=("equivariance",)), CPU, Path("spec.yaml"))[0]
    assert shared.chunk_size(len(WORDS), attention=False) == SHARED_PREFIX_CHUNK  # a small model: the cap
    assert shared.chunk_size(len(WORDS), attention=True) == PRETRAINED_CHUNK  # maps run dense
    assert dense.chunk_size(len(WORDS), False) == encoder.chunk_size(len(WORDS), False) == PRETRAINED_CHUNK


def test_without_transformers_cache_layers_the_models_own_cache_gives_the_same_numbers(monkeypatch):
    shared, _ = sentences("gpt2", "trained", "float64")
    with torch.inference_mode():
        slots = shared.forward(ORDERS[:40])
        monkeypatch.setattr(slot_cache, "cache_classes", lambda: None)  # transformers before 4.56: DynamicCache
        own = shared.forward(ORDERS[:40])
    assert all(torch.equal(a, b) for a, b in zip(slots.hidden, own.hidden, strict=True))
    assert torch.equal(slots.logprob, own.logprob)
