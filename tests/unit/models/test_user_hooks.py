"""run(spec, hooks={"2.output": fn}) and activations(..., hooks=...): a user's function at a transformers model's hook
point, around every pass (the round-off twin's too), recorded as the user's, never as a built-in ablation."""

from __future__ import annotations

import pytest

from orderlab.spec.extras import installed

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not installed("transformers"), reason="needs the optional extra [hf]"),
]

FAMILIES = ["bert", "gpt2", "llama", "bloom", "t5", "deberta", "gpt_neox", "opt", "qwen2", "roberta", "distilbert"]
POINTS = ["1.input", "1.output", "2.input", "2.output"]


def spec(family: str = "gpt2", metrics: tuple[str, ...] = ("equivariance",)) -> dict:
    model = {"kind": "hf", "family": family, "d_model": 16, "n_heads": 2, "n_layers": 2}
    return {"name": "hooked", "model": model, "inputs": [{"sentence": "dog bites man", "permutations": "all"}],
            "metrics": list(metrics)}  # fmt: skip


def doubled(tensor):
    return 2 * tensor


def assert_doubled(hooked, plain) -> None:
    """hooked == 2 * plain to float32 round-off (of each tensor's largest magnitude): a hooked causal model runs dense,
    the plain one reads its points from the shared-prefix walk (models/walk_points.py)."""
    import torch

    torch.testing.assert_close(hooked, 2 * plain, rtol=1e-5, atol=1e-5 * 2 * plain.abs().max().item())


@pytest.mark.parametrize("family", FAMILIES)
def test_a_hook_replaces_its_point_and_what_follows_sees_it(family: str):
    import torch

    import orderlab.api as ol

    plain = ol.activations(spec(family), POINTS, orders="all")
    first = ol.activations(spec(family), POINTS, orders="all", hooks={"1.input": doubled})  # the embeddings' output
    assert_doubled(first["1.input"], plain["1.input"])  # recorded as the block receives it
    assert not torch.allclose(first["1.output"], plain["1.output"])
    for point in ("1.output", "2.input"):  # one tensor: layer 2's input is layer 1's output
        hooked = ol.activations(spec(family), POINTS, orders="all", hooks={point: doubled})
        assert_doubled(hooked["1.output"], plain["1.output"])
        assert torch.equal(hooked["1.output"], hooked["2.input"])
        assert not torch.allclose(hooked["2.output"], plain["2.output"])
        assert set(hooked.index.encoding) == {"seeded+user_hook", "zero+user_hook"}


def test_an_identity_hook_changes_no_number_only_the_labels():
    import orderlab.api as ol

    maps = spec(metrics=("equivariance", "attention", "lm_logprob"))  # dense passes both: the same arithmetic
    plain = ol.run(maps)
    hooked = ol.run(maps, hooks={"2.output": lambda tensor: tensor})
    renamed = hooked.metrics.replace({"encoding": {"seeded+user_hook": "seeded", "zero+user_hook": "zero"}})
    assert renamed.equals(plain.metrics)
    function = f"{__name__}.test_an_identity_hook_changes_no_number_only_the_labels.<locals>.<lambda>"
    assert hooked.manifest["model"]["user_hooks"] == {"2.output": function}
    assert "user_hooks" not in plain.manifest["model"]
    shared = ol.run(spec(), hooks={"2.output": doubled}).manifest["prefix_sharing"]
    assert all(note.startswith("dense: the user's hooks") for note in shared.values())


def test_a_hook_moves_the_numbers_and_the_twin_runs_it_too(tmp_path):
    import yaml

    import orderlab.api as ol
    from orderlab.measure.adapters import build_adapters
    from orderlab.models.devices import CPU
    from orderlab.spec.load import load_spec

    plain, hooked = ol.run(spec()), ol.run(spec(), hooks={"1.output": doubled})
    layer2 = [frame[frame.layer == 2]["value"].to_list() for frame in (plain.metrics, hooked.metrics)]
    assert layer2[0] != layer2[1]
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(spec()))
    loaded = load_spec(path, user_hooks={"1.output": "doubled"})
    adapter = build_adapters(loaded.spec, CPU, path, user_hooks={"1.output": doubled})[0]
    assert adapter.twin().shared.backend.user_hooks == {"1.output": doubled}  # its round-off is measured hooked too


def test_hooks_on_a_model_object_never_write_it():
    import orderlab.api as ol
    from orderlab.models.hf.given import weights_sha256
    from orderlab.models.hf.loader import PretrainedBackend, Seeded

    backend = PretrainedBackend(Seeded(16, 2, 2, ("bites", "dog", "man"), 0), family="gpt2")
    before = weights_sha256(backend.model)
    ol.run({"name": "given", "inputs": [{"sentence": "dog bites man"}]}, model=backend.model,
           tokenizer=backend.tokenizer, hooks={"1.output": doubled})  # fmt: skip
    assert weights_sha256(backend.model) == before
    left = backend.model.transformer.h[0]._forward_hooks.values()  # transformers keeps its own, installed on first use
    assert left and not [hook for hook in left if hook.__module__ == "orderlab.models.hf.interventions"]


def test_layer_1s_input_hooked_is_what_its_block_computes_from():
    """GPT-2 adds its position table to the token vectors before block 1: doubling that sum by the hook is the model
    run on token vectors 2 wte + wpe, which it adds wpe to (transformers' own inputs_embeds path)."""
    import torch

    from orderlab.models.hf.interventions import user_hooks_applied
    from orderlab.models.hf.loader import PretrainedBackend, Seeded

    backend = PretrainedBackend(Seeded(16, 2, 2, ("bites", "dog", "man"), 0), "float64", family="gpt2")
    model, ids = backend.model, torch.tensor([backend.word_tokens(["dog", "bites", "man"]).ids])
    with torch.no_grad():
        with user_hooks_applied(model, backend.code, {"1.input": doubled}, tuple(ids.shape)):
            hooked = model(input_ids=ids, output_hidden_states=True).hidden_states
        tokens, positions = model.transformer.wte(ids), model.transformer.wpe(torch.arange(ids.shape[1]))[None]
        expected = model(inputs_embeds=2 * tokens + positions, output_hidden_states=True).hidden_states
    assert torch.allclose(hooked[0], 2 * (tokens + positions)) and torch.allclose(hooked[0], expected[0])
    assert torch.allclose(hooked[1], expected[1]) and torch.allclose(hooked[2], expected[2])


def test_what_cannot_be_hooked_is_one_line():
    import orderlab.api as ol
    from orderlab.errors import OrderlabError

    cases = [
        (
            spec(),
            {"3.output": doubled},
            r"^hooks: '3.output' is no hook point; expected logits, or L.POINT with L in 1..2 and POINT one of "
            r"input, q, k, v, pattern, attn_out, mid, mlp_out, output$",
        ),
        (spec(), {"0.input": doubled}, r"^hooks: '0.input'"),
        (spec(), {"2.output": "not a function"}, r"^hooks: '2.output'"),
        (spec(), {"1.output": lambda tensor: tensor[:, :1]}, r"^hooks: '1.output' returned \(\d+, 1, 16\); expected"),
        (
            spec(),
            {"1.atn_out": doubled},
            r"^hooks: '1.atn_out' is no hook point; expected logits, or L.POINT with L "
            r"from 1 and POINT one of input, q, k, v, pattern, attn_out, mid, mlp_out, output$",
        ),  # the spec's check
        (
            spec("bloom"),
            {"1.pattern": doubled},
            r"^hooks: '1.pattern' is formed inside attention code of the family's own \(not transformers' "
            r"AttentionInterface\): read only on bloom; expected one of input, q, k, v, attn_out, mid, mlp_out, "
            r"output$",
        ),
    ]
    for written, hooks, message in cases:
        with pytest.raises(OrderlabError, match=message) as error:
            ol.run(written, hooks=hooks)
        assert "\n" not in str(error.value)


def test_a_point_formed_inline_that_the_block_does_not_go_on_with_is_read_only():
    """A family (a plug-in's) declaring `mid` at a module's argument without in_place: replacing that argument would
    change the module's input only, never the residual stream."""
    from dataclasses import replace

    from orderlab.errors import OrderlabError
    from orderlab.families import FAMILIES as REGISTRY
    from orderlab.families.family import HookSite, fixed_sites
    from orderlab.models.hf.interventions import checked_hooks
    from orderlab.models.hf.loader import PretrainedBackend, Seeded

    gpt2 = REGISTRY.get("gpt2")
    plug_in = replace(gpt2, hook_sites=fixed_sites({**gpt2.hook_sites(None), "mid": HookSite("ln_2", side="input")}))
    backend = PretrainedBackend(Seeded(16, 2, 1, ("dog",), 0), family="gpt2")
    checked_hooks(backend.model, gpt2, {"1.mid": doubled})  # gpt2's own: written in place
    with pytest.raises(OrderlabError, match=r"^hooks: '1.mid' is formed inline \(ln_2's input\): read only on gpt2; "
                       r"expected one of input, q, k, v, pattern, attn_out, mlp_out, output$"):  # fmt: skip
        checked_hooks(backend.model, plug_in, {"1.mid": doubled})
