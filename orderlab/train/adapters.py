"""Trained stacks as adapters: the attention stack's adapter (stack.py) with the weights and encoding tables that
training (orderlab/train) gave it, so the one measuring loop measures a trained stack as it does any other.
"""

from __future__ import annotations

from pathlib import Path

import torch

from orderlab.measure.rows import stack_config
from orderlab.models.adapter_protocol import Adapter
from orderlab.models.attention_stack import AttentionStack
from orderlab.models.stack import StackAdapter, probe_inputs
from orderlab.spec.schema import CheckpointModelSpec, DecodabilitySpec, Spec, relative_to_spec
from orderlab.train.checkpoint import load_checkpoint
from orderlab.train.train import TrainedStack, build_trained_encoding


def trained_adapters(spec: Spec, trained: list[TrainedStack], device: torch.device) -> list[Adapter]:
    """One adapter per trained encoding, in label order (as stack_adapters gives the untrained ones)."""
    config = stack_config(spec)
    ordered = sorted(trained, key=lambda stack: stack.choice.label)
    return [
        TrainedAdapter(spec, stack.choice, config, stack.weights, device,
                       build_trained_encoding(spec, stack, config.dtype, str(device)))
        for stack in ordered
    ]  # fmt: skip


def checkpoint_adapters(spec: Spec, device: torch.device, spec_file: Path) -> list[Adapter]:
    """The checkpoint's trained stack (the spec was filled from its metadata when loaded: load.from_checkpoint)."""
    assert isinstance(spec.model, CheckpointModelSpec)
    return trained_adapters(spec, [load_checkpoint(relative_to_spec(spec_file, spec.model.path), spec)], device)


class TrainedAdapter(StackAdapter):
    """A stack whose encoding holds trained tables: the position probe reuses that encoding rather than drawing
    a fresh (untrained) one for the probe's length."""

    def random_sentences(self, probe: DecodabilitySpec, seed: int) -> list[torch.Tensor]:
        stack = AttentionStack(self.config, self.encoding, self.weights, str(self.device))
        return stack(probe_inputs(self.spec, probe, self.config.d_model, seed)).hidden
