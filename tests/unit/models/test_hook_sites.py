"""Every hook point every family declares (families/<family>.py: hook_sites) reads the tensor transformers forms
there: a module's own output, caught here by a plain torch forward hook, or, where the block forms it inline, the
hand computation from its parts (the residual between attention and MLP: input + attention output, normed where the
block norms it). Tiny seeded models, one pass each."""

from __future__ import annotations

from typing import Any

import pytest
import torch

from orderlab.core.hook_points import LOGITS, hook_name
from orderlab.families import FAMILIES
from orderlab.spec.extras import installed

pytestmark = pytest.mark.skipif(not installed("transformers"), reason="needs the optional extra: orderlab[hf]")

WORDS = ["dog", "bites", "man"]

# Per family, as transformers writes it: the q, k, v module paths below a block (one path: a fused projection,
# 'blocks' [q | k | v] or 'heads' interleaved per head); attention's and the MLP's output modules; how the block
# forms `mid` and its output: 'pre' (mid = input + attn_out, output = mid + mlp_out), 'parallel' (output = input +
# attn_out + mlp_out, no mid), or the two norms of a post-norm block (mid = N1(input + attn_out), output =
# N2(mid + mlp_out)).
EXPECTED: dict[str, dict[str, Any]] = {
    "bert": {"qkv": ("attention.self.query", "attention.self.key", "attention.self.value"),
             "attn_out": "attention.output.dense", "mlp_out": "output.dense",
             "norms": ("attention.output.LayerNorm", "output.LayerNorm")},
    "roberta": {"qkv": ("attention.self.query", "attention.self.key", "attention.self.value"),
                "attn_out": "attention.output.dense", "mlp_out": "output.dense",
                "norms": ("attention.output.LayerNorm", "output.LayerNorm")},
    "deberta": {"qkv": ("attention.self.query_proj", "attention.self.key_proj", "attention.self.value_proj"),
                "attn_out": "attention.output.dense", "mlp_out": "output.dense",
                "norms": ("attention.output.LayerNorm", "output.LayerNorm")},
    "distilbert": {"qkv": ("attention.q_lin", "attention.k_lin", "attention.v_lin"), "attn_out": "attention.out_lin",
                   "mlp_out": "ffn", "norms": ("sa_layer_norm", "output_layer_norm")},
    "gpt2": {"qkv": ("attn.c_attn", "blocks"), "attn_out": "attn", "mlp_out": "mlp", "residual": "pre"},
    "bloom": {"qkv": ("self_attention.query_key_value", "heads"), "attn_out": "self_attention.dense",
              "mlp_out": "mlp.dense_4h_to_h", "residual": "pre"},
    "gpt_neox": {"qkv": ("attention.query_key_value", "heads"), "attn_out": "attention", "mlp_out": "mlp",
                 "residual": "parallel"},
    "llama": {"qkv": ("self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj"), "attn_out": "self_attn",
              "mlp_out": "mlp", "residual": "pre"},
    "qwen2": {"qkv": ("self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj"), "attn_out": "self_attn",
              "mlp_out": "mlp", "residual": "pre"},
    "opt": {"qkv": ("self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj"), "attn_out": "self_attn",
            "mlp_out": "fc2", "residual": "pre"},
    "t5": {"qkv": ("layer.0.SelfAttention.q", "layer.0.SelfAttention.k", "layer.0.SelfAttention.v"),
           "attn_out": "layer.0.SelfAttention", "mlp_out": "layer.1.DenseReluDense", "residual": "pre"},
}  # fmt: skip


def layer_blocks(model: torch.nn.Module) -> torch.nn.ModuleList:
    from orderlab.models.hf.sites import layer_blocks

    return layer_blocks(model)


def first(output: Any) -> torch.Tensor:
    return output if isinstance(output, torch.Tensor) else output[0]


def caught(model: torch.nn.Module, paths: list[str], ids: torch.Tensor, needs_mask: bool) -> dict:
    """(layer, path) -> the module's output on its first call ('' the block's; 'in' the block's input), and the
    logits, from one pass with plain forward hooks."""
    seen: dict[Any, torch.Tensor] = {}

    def keep(key: Any, argument: bool) -> Any:
        def hook(_module: Any, args: tuple, kwargs_or_output: Any) -> None:
            tensor = (args or (kwargs_or_output["hidden_states"],))[0] if argument else first(kwargs_or_output)
            seen.setdefault(key, tensor)

        return hook

    handles = []
    for layer, block in enumerate(layer_blocks(model), start=1):
        for path in paths:
            module = block.get_submodule(path) if path else block
            handles.append(module.register_forward_hook(keep((layer, path), argument=False)))
        handles.append(block.register_forward_pre_hook(keep((layer, "in"), argument=True), with_kwargs=True))
    mask = torch.ones_like(ids) if needs_mask else None  # as the backend's pass
    with torch.no_grad():
        out = model(input_ids=ids, attention_mask=mask, output_attentions=True)
    for handle in handles:
        handle.remove()
    seen[LOGITS] = getattr(out, "logits", None)
    return seen


def heads(tensor: torch.Tensor, width: int) -> torch.Tensor:
    """(B, T, h * width) -> (B, h, T, width)."""
    return tensor.reshape(*tensor.shape[:2], -1, width).transpose(1, 2)


def thirds(fused: torch.Tensor, layout: str, width: int) -> list[torch.Tensor]:
    if layout == "blocks":
        return list(fused.split(fused.shape[-1] // 3, dim=-1))
    per_head = fused.reshape(*fused.shape[:2], -1, 3, width)
    return [per_head[:, :, :, part].flatten(2) for part in range(3)]


@pytest.mark.parametrize("family", FAMILIES.names())
def test_every_declared_point_reads_what_transformers_forms_there(family: str):
    from orderlab.models.hf.loader import PretrainedBackend, Seeded
    from orderlab.models.pretrained import record_hooks

    backend = PretrainedBackend(Seeded(16, 2, 2, tuple(WORDS), 0), "float64", attention=True, family=family)
    model, code, expected = backend.model, backend.code, EXPECTED[family]
    ids = torch.tensor([backend.word_tokens(WORDS).ids])
    points = code.hook_points(model.config)
    names = [*code.pass_points, *(hook_name(layer, point) for layer in (1, 2) for point in points)]
    with torch.no_grad():
        output = backend.forward(ids, attention=True, points=names)
    read = record_hooks(output)
    assert set(read) == set(names)  # every declared point formed, and nothing else
    fused = len(expected["qkv"]) == 2
    norms = expected.get("norms", ())
    paths = [*(expected["qkv"][:1] if fused else expected["qkv"]), expected["attn_out"], expected["mlp_out"], "",
             *norms]  # fmt: skip
    truth = caught(model, paths, ids, code.needs_mask)
    width = 8
    for layer in (1, 2):

        def at(path: str, layer: int = layer) -> torch.Tensor:
            return truth[(layer, path)].reshape(1, ids.shape[1], -1)

        q_k_v = thirds(at(expected["qkv"][0]), expected["qkv"][1], width) if fused else [at(p) for p in expected["qkv"]]
        for point, tensor in zip(("q", "k", "v"), q_k_v, strict=True):
            assert torch.equal(read[hook_name(layer, point)], heads(tensor, width)), point
        attn_out, mlp_out, block_in = at(expected["attn_out"]), at(expected["mlp_out"]), truth[(layer, "in")]
        assert torch.equal(read[hook_name(layer, "attn_out")], attn_out)
        assert torch.equal(read[hook_name(layer, "mlp_out")], mlp_out)
        assert torch.equal(read[hook_name(layer, "output")], at(""))  # the block's own, before any final norm
        assert torch.equal(read[hook_name(layer, "input")], block_in)
        assert read[hook_name(layer, "pattern")].shape == (1, 2, ids.shape[1], ids.shape[1])
        residual = expected.get("residual")
        if residual == "parallel":
            assert hook_name(layer, "mid") not in read
            assert torch.allclose(at(""), block_in + attn_out + mlp_out, atol=1e-12)
            continue
        mid = read[hook_name(layer, "mid")]
        if residual == "pre":
            assert torch.allclose(mid, block_in + attn_out, atol=1e-12)
            assert torch.allclose(at(""), mid + mlp_out, atol=1e-12)
        else:
            block = layer_blocks(model)[layer - 1]
            with torch.no_grad():
                assert torch.allclose(mid, block.get_submodule(norms[0])(block_in + attn_out), atol=1e-12)
                assert torch.allclose(at(""), block.get_submodule(norms[1])(mid + mlp_out), atol=1e-12)
    if code.causal:
        assert torch.equal(read[LOGITS], truth[LOGITS])


@pytest.mark.slow
@pytest.mark.parametrize("family", FAMILIES.names())
def test_a_function_written_at_a_point_is_what_the_point_reads_and_what_follows_computes_from(family: str):
    from orderlab.errors import OrderlabError
    from orderlab.models.hf.interventions import checked_hooks
    from orderlab.models.hf.loader import PretrainedBackend, Seeded
    from orderlab.models.hf.sites import writable_points
    from orderlab.models.pretrained import record_hooks

    backend = PretrainedBackend(Seeded(16, 2, 2, tuple(WORDS), 0), "float64", attention=True, family=family)
    ids = torch.tensor([backend.word_tokens(WORDS).ids])
    config = backend.model.config
    writable = writable_points(backend.code, config)
    names = [hook_name(1, point) for point in writable] + ["2.output"]
    with torch.no_grad():
        plain = record_hooks(backend.forward(ids, attention=True, points=names))
        for point in [name for name in names[:-1] if name != "1.input"]:
            checked_hooks(backend.model, backend.code, {point: torch.zeros_like})
            backend.user_hooks = {point: torch.zeros_like}
            hooked = record_hooks(backend.forward(ids, attention=True, points=names))
            assert hooked[point].abs().max() == 0, point  # read after the write, in the same layout
            assert not torch.allclose(hooked["2.output"], plain["2.output"]), point
    for point in sorted(set(backend.code.hook_points(config)) - set(writable)):  # formed inline or in attention
        with pytest.raises(OrderlabError, match=rf"^hooks: '1.{point}' is .*read only on {family}; expected one of"):
            checked_hooks(backend.model, backend.code, {f"1.{point}": torch.zeros_like})


def inline_mid(family: str) -> bool:
    """Whether the family's default block forms `mid` inline and writes it in place (HookSite.in_place)."""
    site = FAMILIES.get(family).hook_sites(None).get("mid")
    return site is not None and site.in_place


@pytest.mark.parametrize("family", [*filter(inline_mid, FAMILIES.names()), "gpt_neox"])
def test_mid_formed_inline_is_written_into_the_residual_stream_the_block_goes_on_with(family: str):
    """Written at the norm's argument, in place: the block's output is the written mid plus the MLP's output of it, not
    the old mid's residual plus the MLP's output of the new (what replacing the norm's argument alone would give).
    GPT-NeoX's blocks made sequential (use_parallel_residual off, as its config may say) to have a mid."""
    from orderlab.models.hf.loader import PretrainedBackend, Seeded
    from orderlab.models.pretrained import record_hooks

    backend = PretrainedBackend(Seeded(16, 2, 2, tuple(WORDS), 0), "float64", family=family)
    if family == "gpt_neox":
        for module in (backend.model.config, *layer_blocks(backend.model)):
            module.use_parallel_residual = False
    assert inline_mid(family) or backend.code.hook_sites(backend.model.config)["mid"].in_place
    ids = torch.tensor([backend.word_tokens(WORDS).ids])
    names = ["1.mid", "1.mlp_out", "1.output"]
    with torch.no_grad():
        plain = record_hooks(backend.forward(ids, points=names))
        backend.user_hooks = {"1.mid": lambda mid: mid + 1}
        hooked = record_hooks(backend.forward(ids, points=names))
    assert torch.equal(hooked["1.mid"], plain["1.mid"] + 1)
    assert torch.allclose(hooked["1.output"], hooked["1.mid"] + hooked["1.mlp_out"], atol=1e-12)
    assert not torch.allclose(hooked["1.output"], plain["1.mid"] + hooked["1.mlp_out"], atol=1e-3)
