"""A checkpoint's file name: the name rule, widened by what a sweep cell and an encoding label spell."""

from __future__ import annotations

import pytest

from orderlab.core.userfiles import checkpoint_name_problem


@pytest.mark.parametrize(
    "name", ["rope.safetensors", "seed=1_rope.safetensors", "n_layers=2_learned(max_len=6).safetensors",
             "fire(c=1,l=2).safetensors"],
)  # fmt: skip
def test_a_checkpoint_name_may_carry_its_sweep_cell_and_encoding_label(name):
    assert checkpoint_name_problem(name) is None


@pytest.mark.parametrize("name", ["..", ".hidden", "a/b", "a\\b", "", "x y", "(" * 101, "tab\t"])
def test_a_checkpoint_name_is_never_a_path_a_hidden_file_or_unbounded(name):
    assert checkpoint_name_problem(name) is not None
