"""The model zoo: every family seeded from small configs, their position ablations, lm_logprob, and orderlab's
encodings checked against transformers' own implementations. Everything offline, each model built in ~10 ms."""

from __future__ import annotations

import math

import pytest
import torch

from orderlab.core.hook_points import hook_name
from orderlab.encodings import EncodingContext, build_encoding
from orderlab.encodings.alibi import alibi_slopes
from orderlab.encodings.t5_bias import relative_buckets
from orderlab.families import FAMILIES
from orderlab.measure.adapters import build_adapters
from orderlab.measure.sweep_measure import run_sweep
from orderlab.metrics import LOGPROB_CHANGE, PERMUTATION_PREFERRED
from orderlab.models.devices import CPU
from orderlab.models.hf.loader import PretrainedBackend, Seeded, import_transformers
from orderlab.spec.extras import installed
from orderlab.spec.load import load_spec
from orderlab.vocabulary.verdict_words import ORDER_SENSITIVE, PASSING_WORDS

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not installed("transformers"), reason="needs the optional extra: orderlab[hf]"),
]
WORDS = ("dog", "bites", "man", "the")


def zoo_spec(write_spec, families: str, extra: str = "", metrics: str = "[equivariance, invariance, attention]"):
    return load_spec(write_spec(
        f"name: z\nmodel: {{kind: hf, family: {families}, d_model: 16, n_heads: 2, n_layers: 2, "
        f"dtype: float64{extra}}}\n"
        f"inputs: [{{sentence: the dog bites the man, permutations: {{random: 6}}}}]\nmetrics: {metrics}\n"
    ))  # fmt: skip


def test_bidirectional_families_are_equivariant_to_round_off_only_without_positions(write_spec):
    rows = run_sweep(zoo_spec(write_spec, "[bert, t5, deberta]").spec).metrics
    moved = rows[rows["permutation"] != "0 1 2 3 4"]
    for family in ("bert", "t5", "deberta"):
        zero = moved[(moved["family"] == family) & (moved["encoding"] == "zero")]
        seeded = moved[(moved["family"] == family) & (moved["encoding"] == "seeded")]  # the ablation `trained`
        assert set(zero["verdict"]) <= set(PASSING_WORDS) and (zero["value"] == 0).all(), family
        assert (seeded[seeded["metric"] == "equivariance"]["verdict"] == ORDER_SENSITIVE).any(), family


@pytest.mark.parametrize("family", list(FAMILIES))
def test_every_ablation_acts_on_the_pass_and_leaves_the_weights_unchanged(family):
    backend = PretrainedBackend(Seeded(16, 2, 2, WORDS, seed=0), "float64", family=family)
    weights = {name: tensor.clone() for name, tensor in backend.model.state_dict().items()}
    ids = torch.tensor([backend.word_tokens(["the", "dog", "bites", "man"]).ids])
    last = {}
    with torch.inference_mode():
        for ablation in (*FAMILIES.get(family).ablations, "trained"):
            backend.set_positions(ablation, seed=0)
            last[ablation] = backend.forward(ids).hidden[-1]
    for name, tensor in backend.model.state_dict().items():
        assert torch.equal(tensor, weights[name]), name
    for ablation in FAMILIES.get(family).ablations:
        assert ablation == "trained" or not torch.allclose(last[ablation], last["trained"]), ablation


def test_a_checkpoint_folder_gives_the_seeded_model_it_was_saved_from(tmp_path):
    seeded = PretrainedBackend(Seeded(16, 2, 2, WORDS, seed=3), "float64", family="gpt2")
    seeded.model.save_pretrained(tmp_path)
    seeded.tokenizer.save_pretrained(tmp_path)
    loaded = PretrainedBackend(tmp_path, "float64", family="gpt2")
    tokens = loaded.word_tokens(["man", "bites", "dog"])
    assert tokens.ids == seeded.word_tokens(["man", "bites", "dog"]).ids
    with torch.inference_mode():
        torch.testing.assert_close(loaded.forward(torch.tensor([tokens.ids])).hidden[-1],
                                   seeded.forward(torch.tensor([tokens.ids])).hidden[-1])  # fmt: skip


def test_hook_points_come_from_the_measured_pass(write_spec):
    loaded = zoo_spec(write_spec, "llama")
    adapter = build_adapters(loaded.spec, CPU, loaded.path)[0]
    sentence = adapter.sentence(["the", "dog", "bites"])
    points = ("input", "pattern", "output", "q", "raw_scores")
    request = [hook_name(layer, point) for layer in (1, 2) for point in points]
    with torch.inference_mode():
        output = sentence.forward(torch.tensor([[2, 1, 0]]), hooks=request)
    hooks = output.hooks
    assert set(hooks) == set(request) - {"1.raw_scores", "2.raw_scores"}  # the stack's alone: no family exposes it
    assert hooks[hook_name(1, "q")].shape == (1, 2, 4, 8)  # heads, BOS and three words, head width
    assert torch.equal(hooks[hook_name(2, "pattern")], output.patterns()[1])
    assert torch.equal(hooks[hook_name(2, "input")], hooks[hook_name(1, "output")])
    assert hooks[hook_name(1, "pattern")].shape == (1, 2, 4, 4)  # BOS and three words, causal
    assert hooks[hook_name(1, "pattern")][0, :, 0, 1:].abs().max() == 0  # BOS sees only itself


def test_lm_logprob_matches_a_token_by_token_hand_computation(write_spec):
    loaded = zoo_spec(write_spec, "gpt2", metrics="[lm_logprob]")
    rows = run_sweep(loaded.spec).metrics
    backend = PretrainedBackend(Seeded(16, 2, 2, ("bites", "dog", "man", "the"), seed=0), "float64", family="gpt2")

    def logprob(words: list[str]) -> float:
        """Sum over tokens t >= 1 of log softmax(logits of the prefix up to t-1)[token t], one prefix at a time."""
        ids = backend.word_tokens(words).ids
        total = 0.0
        for t in range(1, len(ids)):
            with torch.inference_mode():
                out = backend.model(input_ids=torch.tensor([ids[:t]]))
            logits = out.logits[0, -1].tolist()
            total += logits[ids[t]] - math.log(sum(math.exp(v) for v in logits))
        return total

    original = logprob("the dog bites the man".split())
    seeded = rows[rows["encoding"] == "seeded"]
    for _, row in seeded[seeded["metric"] == LOGPROB_CHANGE].iterrows():
        expected = abs(logprob(row["permuted"].split()) - original) / abs(original)
        assert row["value"] == pytest.approx(expected, rel=1e-9, abs=1e-12), row["permuted"]
    preferred = seeded[seeded["metric"] == PERMUTATION_PREFERRED].set_index("permuted")["value"]
    for permuted, value in preferred.items():
        assert value == float(logprob(permuted.split()) > original), permuted


def test_lm_logprob_is_refused_for_an_encoder(write_spec):
    from orderlab.errors import SpecError

    with pytest.raises(SpecError, match=r"metrics: lm_logprob needs a causal LM; bert is an encoder"):
        zoo_spec(write_spec, "bert", metrics="[lm_logprob]")


def test_an_ablation_a_family_lacks_is_refused_naming_the_combination(write_spec):
    from orderlab.errors import SpecError

    with pytest.raises(SpecError, match=r"bloom has no 'shuffled' ablation; expected one of trained, zero "
                                        r"\(in the sweep combination family=bloom\)"):  # fmt: skip
        zoo_spec(write_spec, "[llama, bloom]", ", position_embeddings: [trained, shuffled]")


# --- orderlab's encodings against transformers' own implementations --------------------------------


@pytest.mark.parametrize("heads", [1, 4, 6, 8, 12, 16])
def test_alibi_slopes_match_bloom(heads):
    transformers = import_transformers()
    from transformers.models.bloom.modeling_bloom import build_alibi_tensor

    assert transformers is not None
    bias = build_alibi_tensor(torch.ones(1, 5), heads, torch.float64)  # (heads, 1, 5): slope_h * j
    theirs = bias[:, 0, 1]  # slope_h * 1, computed by BLOOM in float32
    ours = torch.tensor(alibi_slopes(heads), dtype=torch.float64)
    torch.testing.assert_close(theirs, ours, rtol=4 * torch.finfo(torch.float32).eps, atol=0)


@pytest.mark.parametrize("bidirectional", [True, False])
def test_t5_buckets_match_t5_attention(bidirectional):
    import_transformers()
    from transformers.models.t5.modeling_t5 import T5Attention

    i, j = torch.arange(300)[:, None], torch.arange(300)[None, :]
    theirs = T5Attention._relative_position_bucket(j - i, bidirectional=bidirectional, num_buckets=32,
                                                   max_distance=128)  # fmt: skip
    ours = relative_buckets(i - j, bidirectional, 32, 128)
    if not bidirectional:  # keys after the query are masked: any bucket will do
        ours, theirs = ours.tril(), theirs.tril()
    assert torch.equal(ours, theirs)


def test_rope_half_style_matches_llama_rotary_embedding():
    transformers = import_transformers()
    from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding, apply_rotary_pos_emb

    config = transformers.LlamaConfig(hidden_size=32, num_attention_heads=2, max_position_embeddings=64)
    q, k = torch.randn(2, 2, 7, 16, dtype=torch.float64, generator=torch.Generator().manual_seed(0)).unbind(0)
    cos, sin = LlamaRotaryEmbedding(config)(q, torch.arange(7)[None])
    theirs = apply_rotary_pos_emb(q[None], k[None], cos.double(), sin.double())
    context = EncodingContext(d_model=32, n_heads=2, causal=False, seed=0, dtype="float64", max_len=7)
    ours = build_encoding("rope", context, {"style": "half"}).rotate(q, k)
    for a, b in zip(ours, theirs, strict=True):
        torch.testing.assert_close(a, b[0], rtol=1e-6, atol=1e-6)  # transformers' angles are float32
    interleaved = build_encoding("rope", context).rotate(q, k)[0]
    assert not torch.allclose(interleaved, theirs[0][0])  # RoFormer's pairing is another rotation


def test_models_lists_every_family_and_the_checkpoints_in_the_hf_cache(tmp_path):
    from typer.testing import CliRunner

    from orderlab.cli import app
    from orderlab.models.hf.zoo import catalog

    snapshot = tmp_path / "models--openai-community--gpt2" / "snapshots" / "abc123"
    snapshot.mkdir(parents=True)
    (snapshot / "config.json").write_text('{"model_type": "gpt2"}')
    result = CliRunner().invoke(app, ["models"], env={"COLUMNS": "200", "HF_HUB_CACHE": str(tmp_path)})
    assert result.exit_code == 0, result.output
    for family in FAMILIES:
        assert f"│ {family} " in result.output, family
    gpt2_row = result.output[result.output.index("│ gpt2 ") : result.output.index("│ llama ")]
    assert "openai-community/gpt2 (HF cache)" in gpt2_row
    assert "identity" in result.output and "zero slopes" in result.output
    assert result.output.count("rows read") == len(FAMILIES.names())  # what the unablated condition's rows read
    for entry in catalog(tmp_path).entries:
        assert entry.ablations["trained"].endswith("rows read 'seeded' for seeded weights, 'trained' for loaded "
                                                   "weights"), entry.family  # fmt: skip
