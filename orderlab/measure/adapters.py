"""`build_adapters`: a concrete spec to one adapter per condition; `prefix_sharing`: how each runs its causal passes.

The measuring side's one door to the models: it picks the adapter kind (stack, trained checkpoint, pretrained)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import torch

from orderlab.models import kv_prefix
from orderlab.models.adapter_protocol import Adapter, Pass, Sentence
from orderlab.models.hf.given import UserModel
from orderlab.models.hf.interventions import UserHook
from orderlab.models.stack_adapter import compile_records, stack_adapters
from orderlab.models.stack_adapter import prefix_sharing as stack_prefix_sharing
from orderlab.spec.schema import CheckpointModelSpec, Spec, uses_backend
from orderlab.train.adapters import checkpoint_adapters, probe_inputs_for

__all__ = ["Adapter", "Pass", "Sentence", "build_adapters", "compile_records", "prefix_sharing"]


def build_adapters(
    spec: Spec,
    device: torch.device,
    spec_file: Path,
    attention_maps: bool = False,
    given: UserModel | None = None,
    user_hooks: Mapping[str, UserHook] | None = None,
) -> list[Adapter]:
    """One adapter per condition, in the label order of the CSV's rows; each has its round-off twin.

    attention_maps: passes will be asked for attention maps (or pattern hooks) even if the spec's metrics do not ask:
    a zoo model is then built with the attention that returns its probabilities. given: the model object the spec
    describes (orderlab.api.run(spec, model=...)); user_hooks: the user's functions the spec records by point."""
    if uses_backend(spec):
        from orderlab.models.pretrained import pretrained_adapters  # lazy: transformers, an optional extra

        return list(
            pretrained_adapters(
                spec, device, spec_file, attention_maps=attention_maps, given=given, user_hooks=user_hooks
            )
        )  # a list[Adapter]
    if isinstance(spec.model, CheckpointModelSpec):
        return checkpoint_adapters(spec, device, spec_file)
    return stack_adapters(spec, device, probe_inputs=probe_inputs_for(spec))


def prefix_sharing(spec: Spec) -> dict[str, str]:
    """manifest.json's `prefix_sharing`: how each condition's causal passes run, shared prefixes or dense (empty
    for a spec without causal models)."""
    return kv_prefix.prefix_sharing(spec) if uses_backend(spec) else stack_prefix_sharing(spec)
