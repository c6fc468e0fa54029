"""`build_adapters`: a concrete spec to one adapter per condition; `prefix_sharing`: how each runs its causal passes.

The measuring side's one door to the models: it picks the adapter kind (stack, trained checkpoint, pretrained) and
hands it what the plan decided for the device: its Batching (chunk sizes, row tiles), whether its passes compile,
and whether a causal model's passes share prefixes there."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

import torch

from orderlab.errors import OrderlabError
from orderlab.measure.chunking import device_batching, run_device
from orderlab.models import kv_prefix
from orderlab.models.adapter_protocol import Adapter, Pass, Sentence
from orderlab.models.hf.given import UserModel
from orderlab.models.hf.interventions import UserHook
from orderlab.models.precision import require_dtype, use_matmul_precision
from orderlab.models.stack_adapter import compile_records, stack_adapters
from orderlab.models.stack_adapter import prefix_sharing as stack_prefix_sharing
from orderlab.plan.cost import run_seconds
from orderlab.plan.device import rates_file, read_rates
from orderlab.plan.estimate import estimate
from orderlab.plan.prefix_walk import prefix_walk_pays
from orderlab.spec.schema import CheckpointModelSpec, Spec, uses_backend
from orderlab.train.adapters import checkpoint_adapters, probe_inputs_for

__all__ = ["Adapter", "Pass", "Sentence", "build_adapters", "compile_records", "compile_wanted", "prefix_sharing"]

COMPILE_SETTINGS = ("auto", "always", "never")
COMPILE_AFTER_SECONDS = 300.0  # estimated (at estimate.py's conservative rates); compiling took 10-60 s here
NOT_PAYING = "dense: the prefix walk's calls cost more than one dense batch on this device (plan/device.py)"


def build_adapters(
    spec: Spec,
    device: torch.device,
    spec_file: Path,
    attention_maps: bool = False,
    share_prefixes: bool = True,
    given: UserModel | None = None,
    user_hooks: Mapping[str, UserHook] | None = None,
) -> list[Adapter]:
    """One adapter per condition, in the label order of the CSV's rows; each has its round-off twin.

    attention_maps: passes will be asked for attention maps (or pattern hooks) even if the spec's metrics do not ask:
    a zoo model is then built with the attention that returns its probabilities. share_prefixes=False runs causal
    models dense, as the benchmarks' comparison does; otherwise they share prefixes where it pays on `device`. given:
    the model object the spec describes (orderlab.api.run(spec, model=...)); user_hooks: the user's functions the
    spec records by point. A dtype or matmul precision the device cannot run is refused first, in one line."""
    require_dtype(spec.model.dtype, device)
    use_matmul_precision(spec.model.matmul_precision, device)
    batching = device_batching(device)
    share = share_prefixes and sharing_pays(spec, spec_file, device)
    if uses_backend(spec):
        from orderlab.models.pretrained import pretrained_adapters  # lazy: transformers, an optional extra

        adapters = pretrained_adapters(spec, device, spec_file, batching, share, attention_maps, given, user_hooks)
        return list(adapters)  # a list[Adapter]
    if isinstance(spec.model, CheckpointModelSpec):
        return checkpoint_adapters(spec, device, spec_file, batching)
    return stack_adapters(spec, device, batching, share, compile_wanted(spec), probe_inputs_for(spec))


def sharing_pays(spec: Spec, spec_file: Path, device: torch.device) -> bool:
    """Whether causal passes share prefixes on `device` (always on the CPU; elsewhere as the plan prices it)."""
    if device.type == "cpu":
        return True
    return prefix_walk_pays(spec, spec_file, run_device(device, spec.model.dtype, read_rates(rates_file())))


def compile_wanted(spec: Spec) -> bool:
    """Whether dense passes go through torch.compile: ORDERLAB_COMPILE=always|never (the default), or auto: when the
    run is estimated to take longer than COMPILE_AFTER_SECONDS, so that the compilation (5-60 s) pays for itself."""
    setting = os.environ.get("ORDERLAB_COMPILE", "never")  # opt-in: no gain measured yet on this loaded 2-core box
    if setting not in COMPILE_SETTINGS:
        raise OrderlabError(f"ORDERLAB_COMPILE={setting!r}; expected one of {', '.join(COMPILE_SETTINGS)}")
    if setting != "auto":
        return setting == "always"
    return run_seconds(estimate(spec, Path("spec.yaml"))) > COMPILE_AFTER_SECONDS


def prefix_sharing(spec: Spec, spec_file: Path, device: torch.device) -> dict[str, str]:
    """manifest.json's `prefix_sharing`: how each condition's causal passes run, shared prefixes or dense (empty
    for a spec without causal models)."""
    notes = kv_prefix.prefix_sharing(spec) if uses_backend(spec) else stack_prefix_sharing(spec)
    if notes and not sharing_pays(spec, spec_file, device):
        return {label: NOT_PAYING if note.startswith("shared") else note for label, note in notes.items()}
    return notes
