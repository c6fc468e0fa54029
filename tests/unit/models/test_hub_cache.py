"""`model: {kind: hf, name: ORG/NAME}`: a model found in the local Hugging Face cache, offline (a cache folder built
here as huggingface_hub lays one out: snapshots of links into blobs, refs/main), its family read from its config,
checked as any model folder is; a name the cache lacks is one line saying where it looked."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pandas as pd
import pytest
from command_line import invoke

from orderlab.spec.extras import installed
from orderlab.spec.load import load_spec

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not installed("transformers"), reason="needs the optional extra: orderlab[hf]"),
]
REVISION = "0123456789abcdef0123456789abcdef01234567"
WORDS = ("dog", "bites", "man")


def cache_model(hub: Path, name: str, base_only: bool = False) -> Path:
    """A seeded GPT-NeoX saved with save_pretrained into the cache's layout; its snapshot folder."""
    from orderlab.models.hf.loader import PretrainedBackend, Seeded

    seeded = PretrainedBackend(Seeded(16, 2, 2, WORDS, seed=0), family="gpt_neox")
    repository = hub / ("models--" + name.replace("/", "--"))
    saved = repository / "saved"
    (seeded.model.gpt_neox if base_only else seeded.model).save_pretrained(saved)
    seeded.tokenizer.save_pretrained(saved)
    snapshot, blobs = repository / "snapshots" / REVISION, repository / "blobs"
    snapshot.mkdir(parents=True)
    blobs.mkdir()
    for file in saved.iterdir():
        file.rename(blobs / file.name)
        (snapshot / file.name).symlink_to(os.path.relpath(blobs / file.name, snapshot))
    saved.rmdir()
    (repository / "refs").mkdir()
    (repository / "refs" / "main").write_text(REVISION)
    return snapshot


def spec_naming(tmp_path: Path, name: str, extra: str = "") -> Path:
    spec = tmp_path / "cached.yaml"
    spec.write_text(f"name: cached\nmodel: {{kind: hf, name: {name}{extra}}}\n"
                    "inputs: [{sentence: dog bites man, permutations: all}]\nmetrics: [equivariance]\n")  # fmt: skip
    return spec


@pytest.fixture
def hub(tmp_path, monkeypatch):
    folder = tmp_path / "hub"
    folder.mkdir()
    monkeypatch.setenv("HF_HUB_CACHE", str(folder))
    return folder


def test_a_cached_model_is_found_offline_its_family_read_from_its_config(hub, tmp_path):
    cache_model(hub, "Org/pythia-tiny")
    spec = spec_naming(tmp_path, "Org/pythia-tiny")
    assert load_spec(spec).spec.model.family == "gpt_neox"
    result = invoke("run", str(spec), "--out", str(tmp_path / "out"), "--quiet")
    assert result.exit_code == 0, result.output
    rows = pd.read_csv(tmp_path / "out" / "cached" / "metrics.csv")
    assert set(rows["encoding"]) == {"trained", "zero"}  # loaded weights: labelled trained, not seeded


def test_heads_the_measurement_does_not_use_are_recorded_not_refused(hub, tmp_path):
    cache_model(hub, "Org/pythia-base", base_only=True)  # no language-model head in the files
    result = invoke("run", str(spec_naming(tmp_path, "Org/pythia-base")), "--out", str(tmp_path / "out"), "--quiet")
    assert result.exit_code == 0, result.output
    manifest = json.loads((tmp_path / "out" / "cached" / "manifest.json").read_text())
    [head] = manifest["model_files"]["missing_unused"]  # the LM head: lm_head (transformers 5), embed_out (4)
    assert head in ("lm_head.weight", "embed_out.weight") and manifest["model_files"]["random_init"] == []


def test_a_name_the_cache_lacks_is_one_line_saying_where_it_looked(hub, tmp_path):
    result = invoke("validate", str(spec_naming(tmp_path, "Org/absent")))
    assert result.exit_code == 2
    assert f"Org/absent is not in the local Hugging Face cache (looked for {hub}/models--Org--absent/snapshots" in (
        " ".join(result.output.split())
    )
    assert "huggingface-cli download Org/absent" in " ".join(result.output.split())
    assert "Traceback" not in result.output


@pytest.mark.parametrize(
    ("name", "extra", "expected"),
    [
        ("../escape", "", "expected a hub name such as EleutherAI/pythia-70m"),
        ("Org/pythia-tiny", ", path: elsewhere", "got both name and path; expected one"),
        ("Org/pythia-tiny", ", d_model: 32", "a checkpoint has its own shape"),
    ],
)
def test_a_name_held_to_the_rules_of_a_spec(hub, tmp_path, name, extra, expected):
    cache_model(hub, "Org/pythia-tiny")
    result = invoke("validate", str(spec_naming(tmp_path, name, extra)))
    assert result.exit_code == 2 and expected in " ".join(result.output.split()), result.output


def test_a_snapshot_file_that_is_no_regular_file_is_refused_in_one_line(hub, tmp_path):
    snapshot = cache_model(hub, "Org/pythia-tiny")
    (snapshot / "config.json").unlink()
    (snapshot / "config.json").symlink_to(tmp_path)  # a link to a folder where a file belongs
    result = invoke("validate", str(spec_naming(tmp_path, "Org/pythia-tiny")))
    assert result.exit_code == 2 and len(result.output.strip().splitlines()) == 1, result.output
