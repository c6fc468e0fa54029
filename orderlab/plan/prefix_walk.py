"""Whether a causal model's prefix walk pays on a device: the run-time choice between sharing prefixes and dense
passes, priced before the run (plan/decisions.py records it once a run is set up). Pure and torch-free.
"""

from __future__ import annotations

from pathlib import Path

from orderlab.core import permutations as perms
from orderlab.core.text import tokenize
from orderlab.families.family import ModelShape
from orderlab.metrics import Model
from orderlab.plan.chunks import orders_per_pass
from orderlab.plan.device import Device
from orderlab.plan.pretrained_cost import backend_shape, sequence_flops, shared_token_states
from orderlab.plan.rates import itemsize
from orderlab.plan.stack_cost import stack_flops
from orderlab.spec.model_specs import CorpusInputs
from orderlab.spec.schema import DatasetInputs, Spec, uses_backend
from orderlab.spec.sweep import plan


def prefix_walk_pays(spec: Spec, spec_file: str | Path, device: Device) -> bool:
    """Whether a causal model's prefix walk (prefix_trie.py, kv_prefix.py) pays on `device` against dense passes:
    priced at the device's measured rate on the sentence with the most orders, its n + 1 calls of the distinct
    prefixes against one dense batch of the same orders (Device.sharing_pays; on the CPU it always runs). A sweep:
    where it pays for every combination. A corpus has no reorderings that share prefixes: nothing to price."""
    if device.kind == "cpu" or isinstance(spec.inputs, CorpusInputs | DatasetInputs) or not spec.sentences:
        return True
    return all(_walk_pays(configuration.spec, Path(spec_file), device) for configuration in plan(spec))


def _walk_pays(spec: Spec, spec_file: Path, device: Device) -> bool:
    """prefix_walk_pays for a concrete spec, off the CPU."""
    dtype = spec.model.dtype
    model: Model = "pretrained" if uses_backend(spec) else "stack"
    if model == "pretrained":
        shape = backend_shape(spec, spec_file)
    else:
        m = spec.stack
        shape = ModelShape(m.d_model, m.n_layers, m.n_heads, m.ffn_mult * m.d_model, vocab=0)
    item = max(spec.sentences, key=lambda i: perms.count(i.permutations, tokenize(i.sentence)))
    words = len(tokenize(item.sentence))
    tokens = words + (model == "pretrained")  # a causal LM's BOS
    orders = perms.count(item.permutations, tokenize(item.sentence)) + 1
    kv_chunk = model == "pretrained"  # a zoo model's walk is chunked as its shared-prefix passes are
    chunk = orders_per_pass(model, shape, tokens, False, kv_chunk, itemsize(dtype), device.memory, device.kind)
    held = min(orders, chunk)
    per_state = sequence_flops(shape, tokens) / tokens if model == "pretrained" else stack_flops(spec, words) / words
    shared = shared_token_states(words, held, chunk, item.permutations)
    return device.sharing_pays(dtype, shape.n_layers, tokens, held * tokens, shared, per_state)
