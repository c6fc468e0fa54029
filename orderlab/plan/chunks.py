"""How many orders one forward pass takes on a device, and how its rows are padded: the one rule that the plan prices
and the models run by (they receive it as arguments: orderlab/measure/chunking.py binds it to a device).

On the CPU, budgets measured on this project's machines cap a chunk's bytes; on a GPU the chunk is sized from the
memory free on the card (a quarter of it), up to GPU_MOST_ORDERS, where batches stop getting faster.
Pure and torch-free, like the rest of plan/.
"""

from __future__ import annotations

import math

from orderlab.families.family import ModelShape
from orderlab.metrics import Model

# Rows of every matmul are padded to a multiple of this (models/batching.aligned_batch): CPU GEMM kernels work on
# row tiles, and a last, partial tile takes another code path whose results can differ in the last bit (measured:
# float64 rows differ unless the row count is a multiple of 4). In full tiles a sequence's numbers are the same
# whatever else is in its chunk.
ROW_ALIGNMENT = 16
# One chunk's activations on the CPU: about 1,000 sequences of the 4-layer, d_model 128 benchmark
# stack in float32. Throughput was flat from there up to 4x more, while peak memory doubled.
CPU_CHUNK_BYTES = 64 * 2**20
# A chunk may hold this share of the memory free on its device when the chunk is sized.
FREE_SHARE = 4
# On a GPU: orders per pass at most. A plain transformers loop ran fastest in batches of 1,024-4,096 9-token
# sequences on an H200 (issue 32); past that the card is full.
GPU_MOST_ORDERS = 4096
# Permutations per forward pass of a pretrained model on the CPU (models/pretrained.py): batches of this size ran at
# the model's full speed here.
PRETRAINED_CHUNK = 256
# A causal LM whose prefixes are shared (models/kv_prefix.py) walks a chunk's trie depth by depth; its first depths
# hold a few prefixes each and read every weight for them, so a longer chunk shares them among more orders (figures:
# docs/performance.md). On the CPU: up to SHARED_PREFIX_CHUNK orders a pass, as many as SHARED_PREFIX_CHUNK_BYTES hold.
SHARED_PREFIX_CHUNK = 1024
SHARED_PREFIX_CHUNK_BYTES = 3 * 2**30
# A causal LM's pass holds its logits over the vocabulary for every token, and their log-softmax (lm_logprob).
LOGIT_COPIES = 2


def sequence_values(n: int, d_model: int, ffn_mult: int, n_layers: int, n_heads: int, attention_maps: bool) -> int:
    """Numbers one sequence of n tokens holds in a chunk (sequences_per_chunk divides its budget by them).

    Kept for the metrics: layers + 1 hidden states; transient per layer: q, k, v, attention output,
    two FFN activations of width ffn_mult * d_model, a few d-wide temporaries; maps: layers x heads x n x n.
    """
    d, f = d_model, ffn_mult * d_model
    return n * ((n_layers + 1) * d + 6 * d + 2 * f) + (n_layers * n_heads * n * n if attention_maps else 0)


def sequences_per_chunk(values: int, itemsize: int, budget: int) -> int:
    """As many sequences as fit the budget, at least one."""
    return max(1, budget // (values * itemsize))


def shared_prefix_values(tokens: int, d_model: int, n_layers: int, vocab: int, kv_width: int | None = None) -> int:
    """Numbers one order of `tokens` tokens holds in a shared-prefix pass: every layer's keys and values (kv_width
    wide each: fewer than d_model with grouped-query attention), twice (the slot cache, and its copy gathered prefix
    by prefix at a reorder), every layer's token states three times (per depth, gathered to (B, T, d), and the
    metrics' temporaries), and the next-token distribution of the depth being walked, twice (each depth's is reduced
    to one log-probability an order before the next is computed: models/kv_prefix.py).
    Measured at GPT-2-small size, 8 tokens: 1.4 MB an order (peak RSS over 1,024 orders), this counts 2.1 MB."""
    keys = kv_width or d_model
    return 4 * n_layers * tokens * keys + 3 * (n_layers + 1) * tokens * d_model + LOGIT_COPIES * vocab


def shared_prefix_chunk(values: int, itemsize: int, budget: int, most: int = SHARED_PREFIX_CHUNK) -> int:
    """Orders per shared-prefix pass: as many as the budget holds, at most `most`, in whole row tiles."""
    fitting = sequences_per_chunk(values, itemsize, budget)
    return max(ROW_ALIGNMENT, min(most, fitting) // ROW_ALIGNMENT * ROW_ALIGNMENT)


def pass_values(shape: ModelShape, tokens: int, attention: bool) -> int:
    """Numbers one dense sequence of `tokens` tokens holds: its activations, and a causal LM's logits."""
    values = sequence_values(
        tokens, shape.d_model, shape.ffn // shape.d_model, shape.n_layers, shape.n_heads, attention
    )
    return values + shape.head * LOGIT_COPIES * tokens * shape.vocab


def orders_per_pass(
    model: Model, shape: ModelShape, tokens: int, attention: bool, shared: bool, itemsize: int, free: int, device: str
) -> int:
    """Orders of one sentence of `tokens` tokens per forward pass, for a model of `shape` (the stack or a pretrained
    model) whose passes share prefixes or not, in a dtype of `itemsize` bytes, with `free` bytes of memory free on
    `device` (a torch device type: "cpu", "cuda")."""
    budget = free // FREE_SHARE
    if device == "cpu":
        if shared:
            values = shared_prefix_values(tokens, shape.d_model, shape.n_layers, shape.vocab, shape.keys)
            return shared_prefix_chunk(values, itemsize, min(budget, SHARED_PREFIX_CHUNK_BYTES))
        if model == "pretrained":
            return PRETRAINED_CHUNK
        return sequences_per_chunk(pass_values(shape, tokens, attention), itemsize, min(budget, CPU_CHUNK_BYTES))
    if shared:
        values = shared_prefix_values(tokens, shape.d_model, shape.n_layers, shape.vocab, shape.keys)
        return shared_prefix_chunk(values, itemsize, budget, GPU_MOST_ORDERS)
    return min(GPU_MOST_ORDERS, sequences_per_chunk(pass_values(shape, tokens, attention), itemsize, budget))


def tiles(rows: int) -> int:
    """Rows padded to whole row tiles."""
    return math.ceil(rows / ROW_ALIGNMENT) * ROW_ALIGNMENT
