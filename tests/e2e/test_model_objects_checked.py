"""A model object, its tokenizer and the user's hooks are input from a stranger (issue 42): each problem is one
line naming what is wrong, before any forward pass, never a traceback from inside the model."""

from __future__ import annotations

import pytest

from orderlab.spec.extras import installed

pytestmark = [
    pytest.mark.skipif(not installed("transformers"), reason="needs the optional extra [hf]"),
    pytest.mark.slow,
]

SPEC = {"name": "given", "inputs": [{"sentence": "dog bites man", "permutations": "all"}], "metrics": ["equivariance"]}


def zoo_model(family: str = "gpt2"):
    from orderlab.models.hf.loader import PretrainedBackend, Seeded

    backend = PretrainedBackend(Seeded(16, 2, 2, ("bites", "dog", "man"), 0), family=family)
    return backend.model, backend.tokenizer


def refused(**arguments) -> str:
    import orderlab.api as ol
    from orderlab.errors import OrderlabError

    with pytest.raises(OrderlabError) as error:
        ol.run(
            {**SPEC, "model": {"kind": "hf", "family": "gpt2", "d_model": 16, "n_heads": 2, "n_layers": 2}}
            if "model" not in arguments
            else {**SPEC, "model": {"kind": "hf"}},
            progress=False,
            **arguments,
        )
    message = str(error.value)
    assert "\n" not in message
    return message


@pytest.mark.parametrize("key", [3, (2, "output"), None, "output", "2.", "two.output"])
def test_a_hook_key_that_is_no_point_name_is_one_line(key):
    message = refused(hooks={key: lambda tensor: tensor})
    assert message.startswith("hooks: ") and "expected" in message and ".POINT" in message, message


def test_a_hook_that_is_no_function_is_one_line():
    assert "expected a function of a tensor" in refused(hooks={"2.output": 3})


def test_a_tokenizer_without_a_model_is_refused_not_ignored():
    _, tokenizer = zoo_model()
    assert refused(tokenizer=tokenizer).startswith("tokenizer: given without model=")


@pytest.mark.parametrize("kind", ["lambda", "model", "class"])
def test_a_tokenizer_that_is_no_transformers_tokenizer_is_one_line(kind):
    from transformers import PreTrainedTokenizerFast

    model, _ = zoo_model()
    tokenizer = {"lambda": lambda text: text, "model": model, "class": PreTrainedTokenizerFast}[kind]
    message = refused(model=model, tokenizer=tokenizer)
    assert message.startswith("tokenizer: got ") and "expected the GPT2LMHeadModel's tokenizer" in message


def test_a_model_on_the_meta_device_is_one_line():
    import torch

    model, tokenizer = zoo_model()
    model.to(torch.device("meta"))
    message = refused(model=model, tokenizer=tokenizer)
    assert "is on the meta device" in message


def test_a_tokenizer_with_more_ids_than_the_token_table_is_one_line():
    model, tokenizer = zoo_model()
    model.resize_token_embeddings(len(tokenizer) - 2)
    assert "token ids; the model's token table" in refused(model=model, tokenizer=tokenizer)


def test_heads_that_do_not_share_key_value_heads_evenly_are_one_line():
    model, tokenizer = zoo_model("qwen2")
    model.config.num_key_value_heads = 3  # 2 heads: a RuntimeError inside attention before
    assert "num_key_value_heads 3" in refused(model=model, tokenizer=tokenizer)


@pytest.mark.parametrize("family", ["gpt2", "t5"])
def test_a_model_whose_layers_disagree_with_its_config_is_one_line(family):
    """Layers cut from the module list with the config left as it was: an IndexError inside the model before."""
    model, tokenizer = zoo_model(family)
    blocks = next(module for module in model.modules() if type(module).__name__ == "ModuleList")
    del blocks[1]
    name = {"gpt2": "transformer.h", "t5": "encoder.block"}[family]
    assert refused(model=model, tokenizer=tokenizer) == (
        f"model: {name} holds 1 layers; config.num_hidden_layers is 2; expected as many layers as the config says"
    )


def test_a_hook_returning_a_tensor_of_another_kind_is_one_line():
    import torch

    message = refused(hooks={"2.output": lambda tensor: torch.zeros(tensor.shape, dtype=torch.int64)})
    assert "hooks: '2.output' returned a torch.int64 tensor" in message


@pytest.mark.parametrize("given", ["model", "hooks", "dict"])
def test_what_cannot_reach_a_dask_worker_is_refused_before_any_worker_starts(given, tmp_path, monkeypatch):
    """Workers read the spec file anew: a model object was refused from inside them ('lm_logprob needs a causal LM;
    bert is an encoder'), hooks late ('the spec records [] but ...'), a dict spec as 'spec dict: file not found'."""
    import yaml

    import orderlab.cluster.workers as workers

    monkeypatch.setattr(workers, "import_distributed", lambda: pytest.fail("a worker was about to start"))
    spec_file = tmp_path / "given.yaml"
    written = {**SPEC, "model": {"kind": "hf", "family": "gpt2", "d_model": 16, "n_heads": 2, "n_layers": 2}}
    spec_file.write_text(yaml.safe_dump(written))
    arguments: dict = {"dict": {}, "hooks": {"hooks": {"2.output": lambda tensor: tensor}}}.get(given, {})
    if given == "model":
        model, tokenizer = zoo_model()
        arguments = {"model": model, "tokenizer": tokenizer}
        spec_file.write_text(yaml.safe_dump({**SPEC, "model": {"kind": "hf"}}))
    import orderlab.api as ol
    from orderlab.errors import OrderlabError

    source = written if given == "dict" else spec_file
    with pytest.raises(OrderlabError, match=r"^workers: .* stay in this process") as error:
        ol.run(source, tmp_path / "out", workers=2, progress=False, **arguments)
    assert {"model": "model object", "hooks": "hooks=", "dict": "spec given as a dict"}[given] in str(error.value)
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())


def test_a_rotary_model_covering_more_than_512_positions_runs_shuffled_past_them():
    """The shuffled ids were a table of 512: an IndexError for a 601-token sentence of a model covering 1,024."""
    import transformers

    import orderlab.api as ol

    _, tokenizer = zoo_model("llama")
    sizes = {"hidden_size": 16, "num_attention_heads": 2, "num_hidden_layers": 1, "intermediate_size": 32}
    config = transformers.LlamaConfig(**sizes, vocab_size=len(tokenizer), max_position_embeddings=1024)
    model = transformers.LlamaForCausalLM(config).eval()
    sentence = " ".join(["dog", "bites", "man"] * 200)
    spec = {"name": "long", "model": {"kind": "hf", "position_embeddings": ["shuffled"]},
            "inputs": [{"sentence": sentence, "permutations": "reverse"}], "metrics": ["equivariance"]}  # fmt: skip
    result = ol.run(spec, model=model, tokenizer=tokenizer, progress=False)
    assert len(result.metrics) > 0 and result.metrics["value"].notna().all()
