"""A folder's bytes are kept on a re-run only when everything that made them matches (issue 42): a run with a
user's hook, or another model, is written as computed, and the Result it returns is what it computed now."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
import yaml
from typer.testing import CliRunner

from orderlab.cli import app
from orderlab.spec.extras import installed

pytestmark = [
    pytest.mark.skipif(not installed("transformers"), reason="needs the optional extra [hf]"),
    pytest.mark.slow,
]

SPEC = {
    "name": "hooked",
    "model": {"kind": "hf", "family": "gpt2", "d_model": 16, "n_heads": 2, "n_layers": 2, "dtype": "float32"},
    "inputs": [{"sentence": "dog bites man", "permutations": "all"}],
    "metrics": ["equivariance"],
}


def identity(tensor):
    return tensor


def ramp(tensor):
    """A small, slot-dependent nudge: each slot's state moves by 2e-4 x its slot, so order now shows."""
    import torch

    return tensor + 2e-4 * torch.arange(tensor.shape[-2], dtype=tensor.dtype).unsqueeze(-1)


def test_a_rerun_with_another_hook_writes_and_returns_what_it_computed(tmp_path: Path):
    import orderlab.api as ol

    ol.run(SPEC, tmp_path / "shared", hooks={"2.output": identity}, progress=False)
    again = ol.run(SPEC, tmp_path / "shared", hooks={"2.output": ramp}, progress=False)
    fresh = ol.run(SPEC, tmp_path / "fresh", hooks={"2.output": ramp}, progress=False)
    for name in ("metrics.csv", "summary.csv"):
        assert (tmp_path / "shared/hooked" / name).read_bytes() == (tmp_path / "fresh/hooked" / name).read_bytes()
    assert again.metrics.equals(fresh.metrics)
    assert (fresh.metrics["verdict"] == "order-sensitive").any()  # the hook made a difference the test can see


def test_the_same_hook_twice_is_written_anew_not_kept(tmp_path: Path):
    """A function's name does not say what it did (it may read state): a hooked folder is never taken as agreeing."""
    import orderlab.api as ol

    ol.run(SPEC, tmp_path, hooks={"2.output": ramp}, progress=False)
    csv = tmp_path / "hooked" / "metrics.csv"
    written = csv.read_text()
    table = pd.read_csv(csv, dtype=str, keep_default_na=False)
    value = table.loc[0, "value"]  # e.g. 1.234567e-01: its last digit moves within check's tolerance
    table.loc[0, "value"] = (
        value[: value.index("e") - 1]
        + ("1" if value[value.index("e") - 1] != "1" else "2")
        + (value[value.index("e") :])
    )
    csv.write_text(table.to_csv(index=False, lineterminator="\n"))
    assert csv.read_text() != written
    ol.run(SPEC, tmp_path, hooks={"2.output": ramp}, progress=False)
    assert csv.read_text() == written


def test_check_names_a_hooked_baseline_and_never_advises_an_update(tmp_path: Path):
    import orderlab.api as ol

    ol.run(SPEC, tmp_path / "results", hooks={"2.output": ramp}, progress=False)
    spec_file = tmp_path / "hooked.yaml"
    spec_file.write_text(yaml.safe_dump(SPEC))
    before = (tmp_path / "results/hooked/metrics.csv").read_bytes()
    for extra in ([], ["--update"]):
        result = CliRunner().invoke(app, ["check", str(spec_file), "--out", str(tmp_path / "results"), *extra])
        assert result.exit_code == 2, result.output
        assert "run from Python with hooks at 2.output" in result.output
        assert "run `orderlab check --update`" not in result.output
    assert (tmp_path / "results/hooked/metrics.csv").read_bytes() == before


def test_a_rerun_on_another_model_object_is_written_as_computed(tmp_path: Path):
    """Two GPT-2 objects of one config whose weights differ in one number's last bits: the same spec hash and
    versions, yet another model, so the second folder is the second model's (its weights hash in the manifest)."""
    import torch

    import orderlab.api as ol
    from orderlab.models.hf.loader import PretrainedBackend, Seeded

    backend = PretrainedBackend(Seeded(16, 2, 2, ("bites", "dog", "man"), 0), family="gpt2")
    model, tokenizer = backend.model, backend.tokenizer
    spec = {**SPEC, "model": {"kind": "hf"}}
    ol.run(spec, tmp_path / "shared", model=model, tokenizer=tokenizer, progress=False)
    with torch.no_grad():
        model.transformer.h[1].mlp.c_fc.weight[0, 0] += 1e-6
    again = ol.run(spec, tmp_path / "shared", model=model, tokenizer=tokenizer, progress=False)
    fresh = ol.run(spec, tmp_path / "fresh", model=model, tokenizer=tokenizer, progress=False)
    assert (tmp_path / "shared/hooked/metrics.csv").read_bytes() == (tmp_path / "fresh/hooked/metrics.csv").read_bytes()
    assert again.manifest["model"]["given"] == fresh.manifest["model"]["given"]


@pytest.mark.parametrize("second_hooks", [{}, {"2.output": identity}])
def test_merge_refuses_shards_run_with_other_hooks(tmp_path: Path, second_hooks):
    """A hooked shard beside an unhooked one (a KeyError before), or beside one with another function."""
    import orderlab.api as ol

    ol.run(SPEC, tmp_path, shard="1/2", hooks={"2.output": ramp}, progress=False)
    ol.run(SPEC, tmp_path, shard="2/2", hooks=second_hooks or None, progress=False)
    shards = [str(tmp_path / f"hooked.shard-{index}-of-2") for index in (1, 2)]
    result = CliRunner().invoke(app, ["merge", *shards, "--out", str(tmp_path / "merged")])
    assert result.exit_code == 2, result.output
    assert "ran other models (user_hooks); expected the shards of one run of one model" in result.output
    assert not (tmp_path / "merged").exists()
