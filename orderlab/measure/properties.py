"""The six properties of a good positional encoding, each measured, with the figure behind its verdict.

Definitions (docs/properties.md has the reasoning). The code c_i of slot i is what the encoding
does at slot i, read from its hooks with the same content at every slot: its input offset
(additive), q and k after `rotate` (rotary), and the biases between slot i and slot 0 in both
directions (bias; for relative encodings this is the code of the offset i). N = --max-len.

  unique          min ||c_i - c_j|| over slots i != j < N                 pass: > 1e-9 * max ||c_i||
  bounded         max ||c_i|| over slots < N                              pass: <= 1.1 * max over slots < N/2
  deterministic   max |c_i - c'_i| between two freshly built encodings    pass: == 0
  generalises     max ||c_i(2N) - c_i(N)|| / max ||c_i(N)|| over slots < N
                  when the sentence grows to 2N slots (an error fails)    pass: <= 1e-9
  smooth          mean ||c_i+1 - c_i|| / mean ||c_i - c_j||, |i-j| >= N/2  pass: < 0.5
  relative-aware  max change of the attention scores among 8 tokens when
                  all move s slots on, relative to max |score|            pass: <= 1e-9

Everything runs in float64 on the CPU with seeded content and weights. Compute only: commands/properties.py writes
the folder, report/terminal.py draws the table.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd
import torch

from orderlab.core.hook_points import hook_name
from orderlab.encodings import ENCODINGS, EncodingContext, PositionalEncoding, build_encoding
from orderlab.errors import OrderlabError
from orderlab.models.attention_stack import Hooks, LayerWeights, seeded_weights
from orderlab.models.stack_builder import build_stack, stack_config
from orderlab.spec.schema import ModelSpec

PROPERTIES = ("unique", "bounded", "deterministic", "generalises", "smooth", "relative-aware")
ROUND_OFF = 1e-9  # relative changes below this are float64 round-off, not position
BOUNDED_GROWTH = 1.1  # codes may grow by 10% from the first half of the slots to all of them (random tables)
SMOOTH_RATIO = 0.5  # neighbours must be at most half as far apart as distant slots
CONTENT_TOKENS = 8  # tokens whose attention scores are shifted for "relative-aware"
EXACT_DISTANCES = "donot_use_mm_for_euclid_dist"  # ||a||^2 + ||b||^2 - 2ab leaves ~1e-8 between equal codes
MAX_SLOTS = 1024  # 2N = 2048: CoPE's (h, 2N, 2N) intermediates stay near 1 GB


@dataclass(frozen=True)
class PropertyFigure:
    encoding: str
    property: str
    figure: float  # the measured number behind the verdict (NaN when it could not be measured)
    limit: float  # what the figure is compared with
    passed: bool
    note: str = ""


def properties_context(d_model: int, n_heads: int, max_len: int, seed: int = 0) -> EncodingContext:
    return EncodingContext(d_model=d_model, n_heads=n_heads, causal=False, seed=seed, dtype="float64", max_len=max_len)


def build(name: str, context: EncodingContext) -> PositionalEncoding:
    """The encoding with default parameters, except max_len (where it has one) = the length it is built for."""
    cls = ENCODINGS.resolve(name)
    params = {"max_len": context.max_len} if "max_len" in cls.Params.model_fields else {}
    try:
        ENCODINGS.validate(name, context, params)
    except ValueError as error:
        raise OrderlabError(f"encoding {name!r} cannot run at d_model={context.d_model}: {error}") from None
    return build_encoding(name, context, params)


def probe_content(context: EncodingContext) -> torch.Tensor:
    """(h, d_head) seeded content vectors of norm sqrt(d_head), one per head, the same at every slot."""
    generator = torch.Generator().manual_seed(context.seed)
    u = torch.randn(context.n_heads, context.d_head, generator=generator, dtype=torch.float64)
    norms: torch.Tensor = u.norm(dim=-1, keepdim=True)
    return u / norms * math.sqrt(context.d_head)


def slot_codes(encoding: PositionalEncoding, n: int, content: torch.Tensor) -> torch.Tensor:
    """(n, c) code of each slot: input offset, rotated q and k, biases to and from slot 0 (what the hooks use)."""
    h, d_head = content.shape
    q = content[None, :, None, :].expand(1, h, n, d_head)  # (1, h, n, d_head): same content at every slot
    k = q.clone()
    parts = []
    offsets = encoding.input_offsets(n)
    if offsets is not None:
        parts.append(offsets.double())  # (n, d_model)
    rotated_q, rotated_k = encoding.rotate(q, k)
    if rotated_q is not q or rotated_k is not k:
        parts += [r[0].transpose(0, 1).reshape(n, h * d_head) for r in (rotated_q, rotated_k)]  # (n, h*d_head) each
    bias = encoding.attention_bias(rotated_q, rotated_k)
    if bias is not None:
        bias = bias.expand(1, h, n, n)[0]  # (h, n, n)
        parts += [bias[:, :, 0].T, bias[:, 0, :].T]  # (n, h) each: slot i -> slot 0 and slot 0 -> slot i
    return torch.cat(parts, dim=-1) if parts else torch.zeros(n, 1, dtype=torch.float64)


def attention_scores(encoding: PositionalEncoding, x: torch.Tensor, shift: int, layer: LayerWeights) -> torch.Tensor:
    """(h, m, m) scores among m content tokens x (m, d) placed at slots shift..shift+m-1 (zeros before).

    Read off the `scores` hook of a one-layer stack (no norm, no residual), scaled and biased as in any run.
    """
    d = x.shape[1]
    model = ModelSpec(d_model=d, n_heads=encoding.context.n_heads, n_layers=1, residual=False, norm="none", ffn=False,
                      dtype="float64")  # fmt: skip
    hooks: Hooks = {}
    build_stack(model, encoding, [layer])(torch.cat([torch.zeros(shift, d, dtype=x.dtype), x])[None], hooks=hooks)
    return hooks[hook_name(1, "scores")][0, :, shift:, shift:]  # (h, m, m)


def ratio(numerator: float, denominator: float) -> float:
    if denominator > 0:
        return numerator / denominator
    return 0.0 if numerator == 0 else math.inf


def measure_encoding(name: str, context: EncodingContext) -> list[PropertyFigure]:
    """The six measurements for one encoding in `context` (N = context.max_len)."""
    n, content = context.max_len, probe_content(context)
    encoding = build(name, context)
    codes = slot_codes(encoding, n, content)  # (N, c)
    norms = codes.norm(dim=-1)  # (N,)
    distances = torch.cdist(codes, codes, compute_mode=EXACT_DISTANCES)  # (N, N)
    slots = torch.arange(n)
    offset = (slots[:, None] - slots[None, :]).abs()  # (N, N)
    found = []

    def add(prop: str, figure: float, limit: float, passed: bool, note: str = "") -> None:
        found.append(PropertyFigure(name, prop, float(figure), float(limit), bool(passed), note))

    largest = float(norms.max())
    closest = float(distances[offset > 0].min())
    add("unique", closest, ROUND_OFF * largest, largest > 0 and closest > ROUND_OFF * largest)
    first_half = float(norms[: max(n // 2, 1)].max())
    add("bounded", largest, BOUNDED_GROWTH * first_half, largest <= BOUNDED_GROWTH * first_half)
    again = slot_codes(build(name, context), n, content)
    add("deterministic", float((codes - again).abs().max()), 0.0, torch.equal(codes, again))
    add(*_generalises(name, context, codes, content))
    neighbours = float(distances.diagonal(1).mean())
    distant = float(distances[offset >= max(n // 2, 1)].mean())
    smooth = ratio(neighbours, distant) if distant > 0 else math.nan
    add("smooth", smooth, SMOOTH_RATIO, smooth < SMOOTH_RATIO, "" if distant > 0 else "no codes to compare")
    shift_change = _shift_change(encoding, context)
    add("relative-aware", shift_change, ROUND_OFF, shift_change <= ROUND_OFF)
    return found


def _generalises(
    name: str, context: EncodingContext, codes: torch.Tensor, content: torch.Tensor
) -> tuple[str, float, float, bool, str]:
    n = context.max_len
    try:
        longer = slot_codes(build(name, context), 2 * n, content)[:n]  # (N, c): the first N of 2N slots
    except (ValueError, OrderlabError) as error:  # a user's encoding that fails at 2N slots only fails this one
        return "generalises", math.nan, ROUND_OFF, False, f"error at {2 * n} slots: {error}"
    if not bool(longer.isfinite().all()):
        return "generalises", math.inf, ROUND_OFF, False, f"non-finite codes at {2 * n} slots"
    change = ratio(float((longer - codes).norm(dim=-1).max()), float(codes.norm(dim=-1).max()))
    return "generalises", change, ROUND_OFF, change <= ROUND_OFF, ""


def _shift_change(encoding: PositionalEncoding, context: EncodingContext) -> float:
    """max over shifts s of max |S_s - S_0| / max |S_0|, S_s the scores of the content moved s slots on."""
    m = min(CONTENT_TOKENS, max(context.max_len // 2, 1))
    generator = torch.Generator().manual_seed(context.seed + 1)
    x = torch.randn(m, context.d_model, generator=generator, dtype=torch.float64)  # (m, d)
    model = ModelSpec(d_model=context.d_model, n_heads=context.n_heads, n_layers=1)
    layer = seeded_weights(stack_config(model), context.seed)[0]
    reference = attention_scores(encoding, x, 0, layer)  # (h, m, m)
    top = context.max_len - m
    shifts = sorted({s for s in (1, 2, 3, top // 4, top // 2, top) if 1 <= s <= top})
    changes = [float((attention_scores(encoding, x, s, layer) - reference).abs().max()) for s in shifts]
    return ratio(max(changes, default=0.0), float(reference.abs().max()))


def measure_properties(names: list[str], max_len: int, d_model: int, n_heads: int, seed: int = 0) -> pd.DataFrame:
    """Tidy table: one row per (encoding, property) with figure, limit, verdict (pass / fail) and a note."""
    if not 4 <= max_len <= MAX_SLOTS:
        raise OrderlabError(
            f"--max-len {max_len}: expected 4 to {MAX_SLOTS} slots (bias encodings build (h, 2N, 2N) score matrices)"
        )
    if d_model % n_heads:
        raise OrderlabError(f"--d-model {d_model} is not divisible by --n-heads {n_heads}; expected a multiple")
    context = properties_context(d_model, n_heads, max_len, seed)
    rows = []
    with torch.inference_mode():
        for name in names:
            for found in measure_encoding(name, context):
                rows.append({**found.__dict__, "verdict": "pass" if found.passed else "fail"})
    frame = pd.DataFrame(rows, columns=["encoding", "property", "figure", "limit", "passed", "note", "verdict"])
    return frame[["encoding", "property", "figure", "limit", "verdict", "note"]]
