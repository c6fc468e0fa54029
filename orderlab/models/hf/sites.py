"""A family's hook points on a loaded transformers model: found where its file declares them (Family.hook_sites),
read into a dict or replaced by a function through forward hooks around one pass, removed after it (weights are
never written).

Every point reads as the stack's do: q, k and v (B, heads, T, d_head), split from a fused projection where the
family fuses them; the others (B, T, width), whatever the module's own layout (OPT's feed-forward runs on (B*T, d)).
`L.output` is the block's own output, before any final norm; `L.input` and the attention pattern come from what
transformers returns (models/pretrained.record_hooks).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from typing import Any, cast

import torch

from orderlab.core.hook_points import layer_of, point_of
from orderlab.errors import OrderlabError
from orderlab.families.family import Family, HookSite

QKV = ("q", "k", "v")
BLOCK_OUTPUT = HookSite("")  # `L.output`: the block's own
Rows = tuple[int, int]  # (B, T) of the pass


def layer_blocks(model: torch.nn.Module) -> torch.nn.ModuleList:
    """The model's blocks: the first ModuleList with one module per hidden layer (bert's encoder.layer, gpt2's h,
    llama's layers, t5's encoder block)."""
    count = int(cast(Any, model).config.num_hidden_layers)
    blocks = next((m for m in model.modules() if isinstance(m, torch.nn.ModuleList) and len(m) == count), None)
    if blocks is None:
        raise OrderlabError(f"hooks: {type(model).__name__} has no list of its {count} layers to hook")
    return blocks


def sites(family: Family, config: Any) -> dict[str, HookSite]:
    """The points a module forms on this model: the family's declared sites and the block's output."""
    return {**family.hook_sites(config), "output": BLOCK_OUTPUT}


def head_width(config: Any) -> int:
    """One head's width: the config's own (head_dim, T5's d_kv), else the model width over the heads."""
    width = getattr(config, "head_dim", None) or getattr(config, "d_kv", None)
    return int(width or config.hidden_size // config.num_attention_heads)


@dataclass(frozen=True)
class Located:
    """One layer's point on this model: the module that forms it, and how (its HookSite)."""

    name: str
    module: torch.nn.Module
    site: HookSite
    head_width: int

    @property
    def point(self) -> str:
        return point_of(self.name)

    def read(self, formed: Any, rows: Rows) -> torch.Tensor:
        """The point from the module's input or output: (B, heads, T, d_head) for q, k and v, else (B, T, width)."""
        tensor = formed if isinstance(formed, torch.Tensor) else formed[0]
        batch, slots = rows
        tensor = tensor.reshape(batch, slots, -1)
        if self.site.part is not None:
            tensor = self._third(tensor).reshape(batch, slots, -1)
        if self.point in QKV:
            return tensor.reshape(batch, slots, -1, self.head_width).transpose(1, 2)
        return tensor

    def write(self, formed: Any, value: torch.Tensor, rows: Rows) -> Any:
        """The module's output with this point replaced by `value` (in read's layout)."""
        tensor = formed if isinstance(formed, torch.Tensor) else formed[0]
        batch, slots = rows
        if self.point in QKV:
            value = value.transpose(1, 2).reshape(batch, slots, -1)
        if self.site.part is not None:
            whole = tensor.reshape(batch, slots, -1).clone()
            third = self._third(whole)
            third.copy_(value.reshape(third.shape))
            value = whole
        changed = value.reshape(tensor.shape).to(tensor.dtype)
        return changed if isinstance(formed, torch.Tensor) else (changed, *formed[1:])

    def _third(self, fused: torch.Tensor) -> torch.Tensor:
        """q, k or v as a view of a fused projection's output (B, T, 3 x width): (B, T, width) of 'blocks', (B, T,
        heads, d_head) of 'heads' (a view, so that write can fill it)."""
        part = cast(int, self.site.part)
        if self.site.fused == "blocks":
            return fused.chunk(3, dim=-1)[part]
        batch, slots, _ = fused.shape
        return fused.view(batch, slots, -1, 3, self.head_width)[:, :, :, part]


def locate(model: torch.nn.Module, family: Family, name: str) -> Located | None:
    """Where a layer's point is formed on this model; None for a point no module forms (input, pattern, a whole
    pass's, one this family lacks) or a layer it does not have."""
    config = cast(Any, model).config
    site = sites(family, config).get(point_of(name))
    blocks = layer_blocks(model)
    layer = layer_of(name)
    if site is None or layer is None or not 1 <= layer <= len(blocks):
        return None
    block = blocks[layer - 1]
    module = block.get_submodule(site.module) if site.module else block
    return Located(name, module, site, head_width(config))


@contextmanager
def points_read(
    model: torch.nn.Module, family: Family, names: list[str], rows: Rows, into: dict[str, torch.Tensor]
) -> Iterator[None]:
    """While open, each pass puts the named points that a module forms into `into` (others are left to the caller)."""
    with ExitStack() as stack:
        for name in names:
            found = locate(model, family, name)
            if found is None:
                continue
            if found.site.side == "input":
                handle = found.module.register_forward_pre_hook(_reader(found, rows, into, argument=True))
            else:
                handle = found.module.register_forward_hook(_reader(found, rows, into, argument=False))
            stack.callback(handle.remove)
        yield


def _reader(found: Located, rows: Rows, into: dict[str, torch.Tensor], argument: bool) -> Callable[..., None]:
    """A hook keeping the module's first call of the pass (DeBERTa's projections project its relative position
    embeddings after the tokens)."""

    def hook(_module: torch.nn.Module, args: tuple[Any, ...], *output: Any) -> None:
        if found.name not in into:
            into[found.name] = found.read(args[0] if argument else output[0], rows)

    return hook


def points_written(
    model: torch.nn.Module, family: Family, name: str, rows: Rows, replace: Callable[[torch.Tensor], torch.Tensor]
) -> torch.utils.hooks.RemovableHandle:
    """A hook replacing a module-formed point of every pass by replace(point); its handle removes it. The point must
    be writable (checked_hooks refuses others): a module's output, or an argument the block goes on with (in_place),
    changed in place before the module runs, so that the residual stream carries it too."""
    found = locate(model, family, name)
    assert found is not None and found.site.writable, "interventions.checked_hooks refuses other points"
    calls = [0]  # the module's first call of the pass only, as _reader reads

    def hook(_module: torch.nn.Module, _args: tuple[Any, ...], output: Any) -> Any:
        calls[0] += 1
        return found.write(output, replace(found.read(output, rows)), rows) if calls[0] == 1 else None

    def in_place(_module: torch.nn.Module, args: tuple[Any, ...]) -> None:
        calls[0] += 1
        if calls[0] == 1:
            point = args[0]
            with torch.no_grad():
                point.copy_(found.write(point, replace(found.read(point, rows)), rows))

    if found.site.side == "input":
        return found.module.register_forward_pre_hook(in_place, prepend=True)
    return found.module.register_forward_hook(hook, prepend=True)


def writable_points(family: Family, config: Any) -> tuple[str, ...]:
    """A family's per-layer points that a user's function may replace: those a module emits or that the block goes on
    with from a module's argument (HookSite.in_place), the layer's input, and the pattern where the family's attention
    goes through transformers' AttentionInterface (models/hf/pattern_writes.py)."""
    formed = sites(family, config)
    return tuple(point for point in family.hook_points(config) if point == "input" or
                 (point == "pattern" and family.attention_interface) or
                 (point in formed and formed[point].writable))  # fmt: skip


def read_only(family: Family, config: Any, point: str) -> str:
    """Why a point cannot be written, in words."""
    site = sites(family, config).get(point)
    if site is not None and site.side == "input":
        return f"formed inline ({site.module}'s input): read only"
    if point == "pattern":
        return "formed inside attention code of the family's own (not transformers' AttentionInterface): read only"
    return "read only"


def blocks_path(model: torch.nn.Module) -> str:
    """The dotted path of the model's blocks (GPT2LMHeadModel's 'transformer.h')."""
    blocks = layer_blocks(model)
    return str(next(name for name, module in model.named_modules() if module is blocks))


def nnsight_path(model: torch.nn.Module, family: Family, name: str) -> str:
    """Where nnsight reaches a point of this model, its layers from 0 ('model.transformer.h[1].attn.output'; a module
    that returns a tuple: its first element)."""
    config, layer, point = cast(Any, model).config, layer_of(name), point_of(name)
    if layer is None:  # a whole pass's: a causal LM's logits
        return "model.output.logits"
    block = f"model.{blocks_path(model)}[{layer - 1}]"
    if point == "input":
        return f"{block}.input"
    if point == "pattern":  # what transformers returns after the pass: no write there reaches the pass
        return f"model.output.attentions[{layer - 1}] (eager attention; read only there)"
    site = sites(family, config)[point]
    part = "" if site.part is None else f" (its {point} third)" if site.fused == "blocks" else f" (each head's {point})"
    return f"{block}{'.' if site.module else ''}{site.module}.{site.side}{part}"
