"""The examples of a spec's dataset inputs, from wherever the spec says they are: a file (relative to the spec file),
the Hugging Face datasets cache, or typed into the spec. Torch-free: validate reads them to report a bad line."""

from __future__ import annotations

from pathlib import Path

from orderlab.core.labelled_data import Columns, Example, read_examples, read_hf_dataset
from orderlab.core.text import tokenize
from orderlab.errors import OrderlabError
from orderlab.spec.schema import DatasetInputs


def examples_of(inputs: DatasetInputs, spec_file: Path) -> list[Example]:
    """Every example, in the order given; OrderlabError (one line) for a file or example that cannot be read."""
    columns = Columns(inputs.text, inputs.pair, inputs.label, inputs.group)
    if inputs.dataset is not None:
        return read_examples(spec_file.parent / inputs.dataset, columns)
    if inputs.hf_dataset is not None:
        return read_hf_dataset(inputs.hf_dataset, inputs.split, columns)
    assert inputs.examples is not None
    found = []
    for index, given in enumerate(inputs.examples):
        text, pair = tokenize(given.text), None if given.pair is None else tokenize(given.pair)
        if not text or pair == []:
            raise OrderlabError(f"inputs.examples[{index}]: an empty sentence; expected at least one word")
        found.append(Example(f"examples[{index}]", text, pair, given.label, given.group))
    return found
