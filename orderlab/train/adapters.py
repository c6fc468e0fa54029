"""Trained stacks as adapters: the attention stack's adapter (models/stack_adapter.py) with the weights and encoding
tables that training gave it, so the one measuring loop measures a trained stack as it does any other; and the position
probe's sentences of a train: spec, which the untrained stacks of that spec use too.
"""

from __future__ import annotations

from pathlib import Path

import torch

from orderlab.models.adapter_protocol import Adapter
from orderlab.models.batching import Batching
from orderlab.models.stack_adapter import ProbeInputs, StackAdapter, random_probe_inputs
from orderlab.spec.schema import CheckpointModelSpec, DecodabilitySpec, Spec, relative_to_spec
from orderlab.train.checkpoint import load_checkpoint
from orderlab.train.tasks import TaskData, vocabulary_vectors
from orderlab.train.train import TrainedStack, build_trained_encoding, train_seed


def trained_adapters(
    spec: Spec, trained: list[TrainedStack], device: torch.device, batching: Batching
) -> list[Adapter]:
    """One adapter per trained encoding, in label order (as stack_adapters gives the untrained ones)."""
    ordered = sorted(trained, key=lambda stack: stack.choice.label)
    probes = probe_inputs_for(spec)
    return [
        TrainedAdapter(spec, stack.choice, stack.weights, device, batching,
                       build_trained_encoding(spec, stack, spec.stack.dtype, str(device)), probe_inputs=probes)
        for stack in ordered
    ]  # fmt: skip


def checkpoint_adapters(spec: Spec, device: torch.device, spec_file: Path, batching: Batching) -> list[Adapter]:
    """The checkpoint's trained stack (the spec was filled from its metadata when loaded: load.from_checkpoint)."""
    assert isinstance(spec.model, CheckpointModelSpec)
    stacks = [load_checkpoint(relative_to_spec(spec_file, spec.model.path), spec)]
    return trained_adapters(spec, stacks, device, batching)


class TrainedAdapter(StackAdapter):
    """A stack whose encoding holds trained tables: the position probe reuses that encoding rather than drawing
    a fresh (untrained) one for the probe's length."""

    def random_sentences(self, probe: DecodabilitySpec, seed: int) -> list[torch.Tensor]:
        # its own stack: with maps on (the default) a call never takes the compiled path
        return self.stack(self.probe_inputs(probe, self.config.d_model, seed)).hidden


def probe_inputs_for(spec: Spec) -> ProbeInputs:
    """The position probe's sentences for `spec`: its train: task's own (decodability.from_task, so that 'above
    chance' is asked of the sentences the stack learned on), else uniform random ones."""
    if not spec.decodability.from_task:
        return random_probe_inputs

    def task_sentences(probe: DecodabilitySpec, d_model: int, seed: int) -> torch.Tensor:
        assert spec.train is not None  # relations.validate_probe_sentences
        words = TaskData(spec.train, train_seed(spec)).probe_set(probe.sentences, probe.length)  # (S, n)
        return vocabulary_vectors(spec.train.vocabulary, seed, d_model)[words]

    return task_sentences
