"""A loaded transformers model passed from Python (orderlab.api.run(spec, model=..., tokenizer=...)).

It is measured by the same adapters, ablations and hooks as the zoo's models (the same numbers as the seeded zoo
model it is), its weights are never written, the manifest records it, and what cannot be measured is one line.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from orderlab.spec.extras import installed

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not installed("transformers"), reason="needs the optional extra [hf]"),
]

SENTENCE = "dog bites man"
WORDS = ("bites", "dog", "man")


def zoo_model(family: str, seed: int = 0):
    """The model and tokenizer orderlab builds for a seeded zoo spec of this family (d_model 32, 4 heads, 2 layers)."""
    from orderlab.models.hf.loader import PretrainedBackend, Seeded

    backend = PretrainedBackend(Seeded(32, 4, 2, WORDS, seed), family=family)
    return backend.model, backend.tokenizer


def spec(model: dict | None = None, metrics: tuple[str, ...] = ("equivariance", "attention")) -> dict:
    written = {"name": "given", "inputs": [{"sentence": SENTENCE, "permutations": "all"}], "metrics": list(metrics)}
    return written | ({"model": model} if model is not None else {})


@pytest.mark.parametrize("family", ["gpt2", "bert"])
def test_a_model_object_gets_the_numbers_of_the_zoo_model_it_is(family: str):
    import orderlab.api as ol

    ablations = ["trained", "zero", "shuffled"]
    seeded = ol.run(spec({"kind": "hf", "family": family, "d_model": 32, "n_heads": 4, "n_layers": 2,
                          "position_embeddings": ablations}))  # fmt: skip
    model, tokenizer = zoo_model(family)
    given = ol.run(spec({"kind": "hf", "position_embeddings": ablations}), model=model, tokenizer=tokenizer)
    assert sorted(given.metrics["encoding"].unique()) == ["given", "shuffled", "zero"]
    renamed = given.metrics.replace({"encoding": {"given": "seeded"}})
    assert renamed.equals(seeded.metrics)
    assert seeded.manifest["model"].get("given") is None
    assert given.manifest["model"]["family"] == family


def test_its_weights_are_never_written_and_its_mode_is_restored():
    import orderlab.api as ol
    from orderlab.models.hf.given import weights_sha256

    model, tokenizer = zoo_model("gpt2")
    model.train()
    model.transformer.h[0].eval()  # one module's own mode, restored as it was
    before = weights_sha256(model)
    runs = [
        spec({"kind": "hf", "position_embeddings": ["trained", "zero", "shuffled", "sinusoidal"]},
             ("equivariance", "attention", "lm_logprob")),
        spec({"kind": "hf", "dtype": "float64"}),  # a converted copy runs; the object stays float32
    ]  # fmt: skip
    for written in runs:
        result = ol.run(written, model=model, tokenizer=tokenizer)
        assert result.verdicts  # it measured
    assert weights_sha256(model) == before
    assert model.training and not model.transformer.h[0].training and model.transformer.h[1].training


def test_its_attention_implementation_is_restored():
    import orderlab.api as ol

    model, tokenizer = zoo_model("gpt2")
    model.set_attn_implementation("sdpa")
    result = ol.run(spec({"kind": "hf"}), model=model, tokenizer=tokenizer)
    assert "attention_equivariance" in set(result.metrics["metric"])  # eager ran for the maps
    assert model.config._attn_implementation == "sdpa"


def test_the_manifest_records_its_class_config_and_weights(tmp_path: Path):
    import orderlab.api as ol
    from orderlab.models.hf.given import weights_sha256

    model, tokenizer = zoo_model("bert")
    result = ol.run(spec(), out=tmp_path, model=model, tokenizer=tokenizer)
    recorded = ol.load(result.folder).manifest["model"]["given"]
    assert recorded["model_class"] == "transformers.models.bert.modeling_bert.BertModel"
    assert recorded["config"]["hidden_size"] == 32 and recorded["config"]["model_type"] == "bert"
    assert recorded["weights_sha256"] == weights_sha256(model)
    other, _ = zoo_model("bert", seed=1)
    assert weights_sha256(other) != recorded["weights_sha256"]


def test_the_hash_sees_a_single_changed_weight():
    import torch

    from orderlab.models.hf.given import weights_sha256

    model, _ = zoo_model("gpt2")
    before = weights_sha256(model)
    with torch.no_grad():
        model.transformer.wpe.weight[3, 5] += 1e-7
    assert weights_sha256(model) != before


def test_a_module_of_no_supported_family_is_one_line():
    import torch
    import transformers

    import orderlab.api as ol
    from orderlab.errors import OrderlabError

    with pytest.raises(OrderlabError) as plain:
        ol.run(spec(), model=torch.nn.Linear(4, 4), tokenizer=str)
    config = transformers.ElectraConfig(vocab_size=16, hidden_size=8, num_hidden_layers=1, num_attention_heads=2)
    other = transformers.ElectraModel(config)
    with pytest.raises(OrderlabError) as foreign:
        ol.run(spec(), model=other, tokenizer=str)
    for error in (plain, foreign):
        message = str(error.value)
        assert "\n" not in message and "gpt2" in message and "orderlab/families/" in message
    assert "Linear" in str(plain.value) and "'electra'" not in str(plain.value)
    assert "ElectraModel" in str(foreign.value)


def test_a_spec_that_contradicts_the_object_is_refused_by_field():
    import orderlab.api as ol
    from orderlab.errors import OrderlabError, SpecError

    model, tokenizer = zoo_model("gpt2")
    for block, field in [({"kind": "hf", "d_model": 64}, "model.d_model"), ({"kind": "hf", "family": "bert"},
                         "model.family"), ({"d_model": 32}, "model.kind")]:  # fmt: skip
        with pytest.raises(SpecError, match=field):
            ol.run(spec(block), model=model, tokenizer=tokenizer)
    with pytest.raises(OrderlabError, match=r"^tokenizer: "):
        ol.run(spec(), model=model, tokenizer=None)


def test_a_spec_file_cannot_claim_a_model_object(tmp_path: Path):
    from orderlab.errors import SpecError
    from orderlab.spec.load import load_spec

    path = tmp_path / "claims.yaml"
    path.write_text(
        "model: {kind: hf, family: gpt2, given: {model_class: x, config: {}, weights_sha256: y}}\n"
        "inputs: [{sentence: dog bites man}]\n"
    )
    with pytest.raises(SpecError, match=r"model\.given: .*orderlab\.api\.run"):
        load_spec(path)


def test_validate_describes_the_object_as_run_does():
    import orderlab.api as ol

    model, _ = zoo_model("llama")
    checked = ol.validate(spec({"kind": "hf", "position_embeddings": ["trained", "shuffled"]}), model=model)
    assert checked.model.family == "llama" and checked.model.given is not None
    assert checked.model.labels == ["given", "shuffled"]
    assert checked.model.given.config["num_hidden_layers"] == 2
