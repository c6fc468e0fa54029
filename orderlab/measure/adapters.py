"""`build_adapters`: a concrete spec to one adapter per condition; `run_decisions`: how a run computes, decided once.

The measuring side's one door to the models: it picks the adapter kind (stack, trained checkpoint, pretrained) and
hands it what the plan decided for the device: its Batching (chunk sizes, row tiles), and the run's Decisions
(plan/decisions.py): whether its passes compile, and whether a causal model's passes share prefixes there."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path

import torch

from orderlab.measure.chunking import device_batching, run_device
from orderlab.models import kv_prefix
from orderlab.models.adapter_protocol import Adapter, Pass, Sentence, compile_records
from orderlab.models.hf.given import UserModel
from orderlab.models.precision import require_dtype, use_matmul_precision
from orderlab.models.stack_adapter import prefix_sharing as stack_prefix_sharing
from orderlab.models.stack_adapter import stack_adapters
from orderlab.models.user_hooks import UserHook
from orderlab.plan.decisions import GPU_PACKED_TOKENS, Decisions, compile_pays, decide
from orderlab.plan.device import rates_file, read_rates
from orderlab.spec.schema import CheckpointModelSpec, Spec, uses_backend
from orderlab.train.adapters import checkpoint_adapters, probe_inputs_for

__all__ = [
    "Adapter", "Pass", "Sentence", "build_adapters", "compile_records", "compile_wanted", "prefix_sharing",
    "run_decisions",
]  # fmt: skip

NOT_PAYING = "dense: the prefix walk's calls cost more than one dense batch on this device (plan/device.py)"
NOT_ASKED = "dense: ORDERLAB_PREFIX_WALK=never"


def build_adapters(
    spec: Spec,
    device: torch.device,
    spec_file: Path,
    attention_maps: bool = False,
    decisions: Decisions | None = None,
    given: UserModel | None = None,
    user_hooks: Mapping[str, UserHook] | None = None,
) -> list[Adapter]:
    """One adapter per condition, in the label order of the CSV's rows; each has its round-off twin.

    attention_maps: passes will be asked for attention maps (or pattern hooks) even if the spec's metrics do not ask:
    a zoo model is then built with the attention that returns its probabilities. decisions: the run's, made when its
    measurement was set up (run_decisions; None: decided here, for a spec measured on its own); share_prefixes
    False runs causal models dense, as the benchmarks' comparison does. given: the model object the spec describes
    (orderlab.api.run(spec, model=...)); user_hooks: the user's functions the spec records by point. A dtype or
    matmul precision the device cannot run is refused first, in one line."""
    require_dtype(spec.model.dtype, device)
    use_matmul_precision(spec.model.matmul_precision, device)
    decided = decisions or run_decisions(spec, spec_file, device)
    batching = replace(device_batching(device), packed_tokens=decided.packed_tokens, capture=decided.capture)
    if uses_backend(spec):
        from orderlab.models.pretrained import pretrained_adapters  # lazy: transformers, an optional extra

        share = decided.share_prefixes
        adapters = pretrained_adapters(spec, device, spec_file, batching, share, attention_maps, given, user_hooks)
        return list(adapters)  # a list[Adapter]
    if isinstance(spec.model, CheckpointModelSpec):
        return checkpoint_adapters(spec, device, spec_file, batching)
    return stack_adapters(spec, device, batching, decided.share_prefixes, decided.compile, probe_inputs_for(spec),
                          user_hooks)  # fmt: skip


def run_decisions(spec: Spec, spec_file: Path, device: torch.device) -> Decisions:
    """How a run of `spec` computes on `device`, decided once (plan/decisions.py): prefixes shared always on the CPU,
    elsewhere where the plan prices the walk cheaper at the device's measured rate; compilation as
    ORDERLAB_COMPILE asks; top depths packed as ORDERLAB_PACKED_TOKENS asks (by default on a GPU only); the walk
    forced on or off by ORDERLAB_PREFIX_WALK; its calls captured as ORDERLAB_CAPTURE asks."""
    priced = None if device.type == "cpu" else run_device(device, spec.model.dtype, read_rates(rates_file()))
    return decide(spec, spec_file, priced, compile_setting(), packed_setting(device), walk_setting(),
                  capture_setting())  # fmt: skip


def compile_wanted(spec: Spec) -> bool:
    """Whether dense passes go through torch.compile, as ORDERLAB_COMPILE asks (plan/decisions.compile_pays)."""
    return compile_pays(spec, compile_setting())


def compile_setting() -> str:
    """ORDERLAB_COMPILE: always, never (the default) or auto."""
    return os.environ.get("ORDERLAB_COMPILE", "never")  # opt-in: no gain measured yet on this loaded 2-core box


def walk_setting() -> str:
    """ORDERLAB_PREFIX_WALK: auto (the default: as the plan prices it on the device), always or never."""
    return os.environ.get("ORDERLAB_PREFIX_WALK", "auto")


def capture_setting() -> str:
    """ORDERLAB_CAPTURE: off (the default) or the torch.compile backend of a causal LM's walk calls
    (models/hf/capture.py): opt-in, as nothing here has measured it pay."""
    return os.environ.get("ORDERLAB_CAPTURE", "off")


def packed_setting(device: torch.device) -> str:
    """ORDERLAB_PACKED_TOKENS: the token budget of a causal prefix walk's packed top depths (0: off); unset, off on
    the CPU (its committed baselines were measured walking) and GPU_PACKED_TOKENS on a GPU."""
    return os.environ.get("ORDERLAB_PACKED_TOKENS", "0" if device.type == "cpu" else str(GPU_PACKED_TOKENS))


def prefix_sharing(spec: Spec, decisions: Decisions) -> dict[str, str]:
    """manifest.json's `prefix_sharing`: how each condition's causal passes ran under the run's decisions, shared
    prefixes or dense (empty for a spec without causal models)."""
    notes = (
        kv_prefix.prefix_sharing(spec, decisions.packed_tokens, decisions.capture)
        if uses_backend(spec)
        else stack_prefix_sharing(spec)
    )
    if notes and not decisions.share_prefixes:
        dense = NOT_ASKED if decisions.walk_forced else NOT_PAYING
        return {label: dense if note.startswith("shared") else note for label, note in notes.items()}
    return notes
