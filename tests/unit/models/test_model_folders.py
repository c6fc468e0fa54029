"""A model folder that does not hold what the spec says is refused in one line (exit 2), never measured as if it
did; parts the measurement does not run are named in manifest.json; random weights are allowed only when the spec
says so, and then no row reads `trained`; nor does a row of seeded weights (`seeded`). Every case goes through
`orderlab run`."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pandas as pd
import pytest
import torch
from command_line import python

from orderlab.cli import app
from orderlab.spec.extras import installed

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not installed("transformers"), reason="needs the optional extra: orderlab[hf]"),
]
WORDS = ("dog", "bites", "man")


@pytest.fixture(scope="module")
def saved_bert(tmp_path_factory) -> Path:
    """A seeded BERT (pooler included) and its word-level tokenizer over WORDS, saved as transformers saves them."""
    from orderlab.models.hf.loader import PretrainedBackend, Seeded

    folder = tmp_path_factory.mktemp("saved") / "bert"
    backend = PretrainedBackend(Seeded(16, 2, 2, WORDS, seed=0), "float32", family="bert")
    backend.model.save_pretrained(folder)
    backend.tokenizer.save_pretrained(folder)
    return folder


@pytest.fixture
def folder(saved_bert, tmp_path) -> Path:
    """A fresh copy of the saved BERT, beside the spec, for a test to spoil."""
    return Path(shutil.copytree(saved_bert, tmp_path / "model"))


def tensors(folder: Path) -> dict[str, torch.Tensor]:
    from safetensors.torch import load_file

    return load_file(folder / "model.safetensors")


def save(folder: Path, weights: dict[str, torch.Tensor]) -> None:
    from safetensors.torch import save_file

    save_file(weights, folder / "model.safetensors", metadata={"format": "pt"})


def run(cli, write_spec, tmp_path, family: str = "bert", extra: str = ""):
    """`orderlab run` of a spec measuring ./model as `family`; the output folder holds a sentinel that must survive."""
    spec = write_spec(
        f"name: folder\nmodel: {{kind: hf, family: {family}, path: model{extra}}}\n"
        "inputs: [{sentence: dog bites man, permutations: all}]\nmetrics: [equivariance, invariance]\n"
    )
    out = tmp_path / "out"
    out.mkdir(exist_ok=True)
    (out / "sentinel.txt").write_text("mine")
    result = cli.invoke(app, ["run", str(spec), "--out", str(out), "-q"])
    assert (out / "sentinel.txt").read_text() == "mine"
    return result


def refused(result, *fragments: str) -> str:
    """The one line of a refusal, checked: exit 2, no traceback, no warning, every fragment in it."""
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1, result.output
    assert "Traceback" not in result.output and "Warning" not in result.output
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    return lines[0]


def written(tmp_path) -> tuple[pd.DataFrame, dict]:
    folder = tmp_path / "out" / "folder"
    return pd.read_csv(folder / "metrics.csv"), json.loads((folder / "manifest.json").read_text())


def test_the_saved_folder_runs_and_its_manifest_says_nothing_is_missing(cli, write_spec, tmp_path, folder):
    result = run(cli, write_spec, tmp_path)
    assert result.exit_code == 0, result.output
    rows, manifest = written(tmp_path)
    assert set(rows["encoding"]) == {"trained", "zero"}
    assert manifest["model_files"] == {"missing_unused": [], "extra_unused": [], "random_init": []}


def labels_written(folder: Path) -> tuple[set[str], list[str], str]:
    """metrics.csv's `encoding` values, summary.csv's columns, and both files' text."""
    metrics, summary = folder / "metrics.csv", folder / "summary.csv"
    text = metrics.read_text() + summary.read_text()
    return set(pd.read_csv(metrics)["encoding"]), list(pd.read_csv(summary).columns), text


def test_seeded_weights_read_seeded_and_the_saved_folder_of_them_reads_trained(cli, write_spec, tmp_path, folder):
    """The same seeded BERT, built from the spec (random weights: `seeded`, never `trained`) and loaded from the
    folder it was saved to (`trained`: the rows ran the folder's own weights and tokenizer)."""
    spec = write_spec(
        "name: seeded\nmodel: {kind: hf, family: bert, d_model: 16, n_heads: 2, n_layers: 2}\n"
        "inputs: [{sentence: dog bites man, permutations: all}]\nmetrics: [equivariance, invariance]\n"
    )
    result = cli.invoke(app, ["run", str(spec), "--out", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    encodings, columns, text = labels_written(tmp_path / "out" / "seeded")
    assert encodings == {"seeded", "zero"}
    assert {"seeded", "seeded verdict", "zero", "zero verdict"} <= set(columns)
    assert "trained" not in text and "trained" not in result.output  # the files and the terminal tables
    assert run(cli, write_spec, tmp_path).exit_code == 0
    encodings, columns, text = labels_written(tmp_path / "out" / "folder")
    assert encodings == {"trained", "zero"}
    assert {"trained", "trained verdict", "zero", "zero verdict"} <= set(columns)
    assert "seeded" not in text


def test_a_tokenizer_that_maps_every_word_to_unk_is_refused(cli, write_spec, tmp_path, folder):
    from orderlab.models.hf.loader import import_transformers, word_level_tokenizer

    word_level_tokenizer(import_transformers(), ("cat", "sat", "mat"), causal=False).save_pretrained(folder)
    refused(run(cli, write_spec, tmp_path), "the tokenizer does not know 3 of the spec's 3 words",
            "'bites', 'dog', 'man'", "'[UNK]'")  # fmt: skip
    assert not (tmp_path / "out" / "folder").exists()


def test_a_folder_without_tokenizer_json_is_refused_in_one_line(cli, write_spec, tmp_path, folder):
    (folder / "tokenizer.json").unlink()
    refused(run(cli, write_spec, tmp_path), f"{folder}: cannot load its tokenizer (Couldn't instantiate the backend "
            "tokenizer from one of); expected tokenizer.json")  # fmt: skip


def test_weights_holding_none_of_the_models_tensors_are_refused(cli, write_spec, tmp_path, folder):
    save(folder, {"foo": torch.zeros(3)})
    line = refused(run(cli, write_spec, tmp_path), "weights do not fit the bert model its config.json describes")
    assert "its files hold 3 numbers, the 37 tensors measured need" in line and "37 missing (embeddings." in line
    assert "checked before building the model" in line and "allow_random_init" in line
    assert not (tmp_path / "out" / "folder").exists()
    save(folder, {"embeddings.word_embeddings.weight": torch.zeros(10_000, 16)})  # numbers enough, names wrong:
    refused(run(cli, write_spec, tmp_path), "(of the 37 tensors measured): 36 missing")  # found once built


CHILD = """
import resource, runpy, sys
sys.argv = ["orderlab", *sys.argv[1:]]
try:
    runpy.run_module("orderlab", run_name="__main__")
except SystemExit as exit:
    print("exit", exit.code, "peak", resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024)
"""


def test_a_config_describing_a_big_model_is_refused_before_the_model_is_built(write_spec, tmp_path, folder):
    """A folder whose config.json describes a BERT of 300 M parameters (1.2 GB in float32) beside a tiny model's
    weights was refused only after transformers had built and initialised the whole model; the files' headers
    against the model built on the meta device refuse it for the cost of the imports."""
    from orderlab.plan.device import available_memory

    if available_memory() < 6 * 10**9:
        pytest.skip("the plan refuses a 300 M parameter model on this machine before any folder check")
    config = json.loads((folder / "config.json").read_text())
    big = {"hidden_size": 1024, "num_hidden_layers": 24, "num_attention_heads": 16, "intermediate_size": 4096}
    (folder / "config.json").write_text(json.dumps({**config, **big}))
    spec = write_spec("name: folder\nmodel: {kind: hf, family: bert, path: model}\n"
                      "inputs: [{sentence: dog bites man, permutations: reverse}]\n"
                      "metrics: [equivariance]\n")  # fmt: skip
    child = python("-c", CHILD, "run", spec, "--out", tmp_path / "out", "-q")
    assert "exit 2 peak" in child.stdout, child.stdout + child.stderr
    assert "checked before building the model" in child.stderr and child.stderr.count("\n") == 1, child.stderr
    peak = int(child.stdout.split()[-1])
    model_bytes = 300 * 10**6 * 4
    imports = 0.3 * model_bytes  # torch and transformers imported, a refusal's work: ~0.4-1.2 GB peak seen here
    assert peak < model_bytes + imports, f"peak RSS {peak / 1e9:.2f} GB: the model was built"


def test_weights_of_another_shape_are_refused(cli, write_spec, tmp_path, folder):
    weights = tensors(folder)
    weights["encoder.layer.0.attention.self.query.weight"] = torch.zeros(16, 8)
    save(folder, weights)
    refused(run(cli, write_spec, tmp_path), "1 of another shape (encoder.layer.0.attention.self.query.weight: 16x8 "
            "in the files, 16x16 in the model)")  # fmt: skip


def test_tensors_of_a_layer_the_config_does_not_declare_are_refused_even_with_random_init(
    cli, write_spec, tmp_path, folder
):
    weights = tensors(folder)
    weights["encoder.layer.2.output.dense.weight"] = torch.zeros(16, 64)
    save(folder, weights)
    refused(run(cli, write_spec, tmp_path, extra=", allow_random_init: true"),
            "1 in the files but not in the model (encoder.layer.2.output.dense.weight)")  # fmt: skip


def test_a_bert_folder_declared_llama_is_refused_at_validate(cli, write_spec, tmp_path, folder):
    refused(run(cli, write_spec, tmp_path, family="llama"),
            "config.json: model_type: got 'bert'; expected a llama checkpoint")  # fmt: skip


def test_contradicting_architectures_are_refused(cli, write_spec, tmp_path, folder):
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, "architectures": ["LlamaForCausalLM"]}))
    refused(run(cli, write_spec, tmp_path), "architectures: got 'LlamaForCausalLM'; expected a bert architecture")


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("[1, 2]", "config.json: a JSON list; expected the config of a bert checkpoint"),
        ("{not json", "config.json: not valid JSON"),
        ('{"model_type": "bert", "hidden_size": "16"}', "config.json: hidden_size: got '16'"),
        ('{"model_type": "bert", "num_hidden_layers": 100000}', "num_hidden_layers: got 100000"),
    ],
)
def test_a_malformed_config_is_one_line_at_validate(cli, write_spec, tmp_path, folder, text, fragment):
    (folder / "config.json").write_text(text)
    refused(run(cli, write_spec, tmp_path), fragment)
    assert refused(cli.invoke(app, ["validate", str(tmp_path / "spec.yaml")]), fragment)


def test_pickled_weights_are_refused_in_one_line_without_a_warning(cli, write_spec, tmp_path, folder):
    torch.save(tensors(folder), folder / "pytorch_model.bin")
    (folder / "model.safetensors").unlink()
    refused(run(cli, write_spec, tmp_path), "pytorch_model.bin: weights in a format orderlab does not load",
            "expected model.safetensors")  # fmt: skip


def test_a_truncated_safetensors_file_is_refused(cli, write_spec, tmp_path, folder):
    data = (folder / "model.safetensors").read_bytes()
    (folder / "model.safetensors").write_bytes(data[: len(data) // 2])
    refused(run(cli, write_spec, tmp_path), "model.safetensors: not a complete safetensors file")


def test_a_fifo_for_a_tokenizer_file_is_refused_not_waited_on(cli, write_spec, tmp_path, folder):
    (folder / "tokenizer_config.json").unlink()
    os.mkfifo(folder / "tokenizer_config.json")
    refused(run(cli, write_spec, tmp_path), "tokenizer_config.json: not a regular file")


def test_a_folder_lacking_only_its_pooler_runs_and_the_manifest_names_it(cli, write_spec, tmp_path, folder):
    weights = {name: tensor for name, tensor in tensors(folder).items() if not name.startswith("pooler.")}
    save(folder, weights | {"cls.predictions.bias": torch.zeros(7)})  # a masked-LM head: added, never run
    result = run(cli, write_spec, tmp_path)
    assert result.exit_code == 0, result.output
    rows, manifest = written(tmp_path)
    assert set(rows["encoding"]) == {"trained", "zero"}
    assert manifest["model_files"] == {
        "missing_unused": ["pooler.dense.bias", "pooler.dense.weight"],
        "extra_unused": ["cls.predictions.bias"],
        "random_init": [],
    }


def test_allowed_random_init_runs_and_no_row_reads_trained(cli, write_spec, tmp_path, folder):
    weights = tensors(folder)
    del weights["encoder.layer.1.attention.self.key.weight"]
    save(folder, weights)
    result = run(cli, write_spec, tmp_path, extra=", allow_random_init: true")
    assert result.exit_code == 0, result.output
    rows, manifest = written(tmp_path)
    assert set(rows["encoding"]) == {"loaded+random_init", "zero+random_init"}
    assert manifest["model_files"]["random_init"] == ["encoder.layer.1.attention.self.key.weight"]
    summary = pd.read_csv(tmp_path / "out" / "folder" / "summary.csv")
    assert not summary.astype(str).apply(lambda column: column.str.contains("trained")).any().any()


def test_random_init_is_refused_for_a_seeded_model(cli, write_spec):
    spec = write_spec("model: {kind: hf, allow_random_init: true}\ninputs: [{sentence: dog bites man}]\n")
    refused(cli.invoke(app, ["validate", str(spec)]), "allow_random_init", "expected allow_random_init only with path")


@pytest.mark.parametrize("family", ["bert", "gpt2", "llama", "bloom", "t5", "deberta"])
def test_every_familys_saved_folder_loads_with_nothing_missing_or_extra(tmp_path, family):
    from orderlab.models.hf.loader import PretrainedBackend, Seeded

    seeded = PretrainedBackend(Seeded(16, 2, 2, WORDS, seed=0), family=family)
    seeded.model.save_pretrained(tmp_path)
    seeded.tokenizer.save_pretrained(tmp_path)
    loaded = PretrainedBackend(tmp_path, family=family)
    assert loaded.fit is not None
    assert loaded.fit.manifest() == {"missing_unused": [], "extra_unused": [], "random_init": []}


def test_a_causal_lm_without_its_head_runs_unless_its_logits_are_read(cli, write_spec, tmp_path):
    from orderlab.models.hf.loader import PretrainedBackend, Seeded

    seeded = PretrainedBackend(Seeded(16, 2, 2, WORDS, seed=0), family="llama")  # untied: lm_head is its own matrix
    seeded.model.save_pretrained(tmp_path / "model")
    seeded.tokenizer.save_pretrained(tmp_path / "model")
    save(tmp_path / "model", {k: v for k, v in tensors(tmp_path / "model").items() if not k.startswith("lm_head.")})
    assert run(cli, write_spec, tmp_path, family="llama").exit_code == 0
    assert written(tmp_path)[1]["model_files"]["missing_unused"] == ["lm_head.weight"]
    spec = tmp_path / "spec.yaml"
    spec.write_text(spec.read_text().replace("[equivariance, invariance]", "[lm_logprob]"))
    result = cli.invoke(app, ["run", str(spec), "--out", str(tmp_path / "again"), "-q"])
    refused(result, "1 missing (lm_head.weight)")


def test_random_init_labels_hold_through_shards_and_merge(cli, write_spec, tmp_path, folder):
    save(folder, {k: v for k, v in tensors(folder).items() if "layer.1.output" not in k})
    run(cli, write_spec, tmp_path, extra=", allow_random_init: true")
    spec = tmp_path / "spec.yaml"
    for index in (1, 2):
        result = cli.invoke(app, ["run", str(spec), "--out", str(tmp_path / "shards"), "--shard", f"{index}/2", "-q"])
        assert result.exit_code == 0, result.output
    shards = [str(tmp_path / "shards" / f"folder.shard-{k}-of-2") for k in (1, 2)]
    result = cli.invoke(app, ["merge", *shards, "--out", str(tmp_path / "merged"), "-q"])
    assert result.exit_code == 0, result.output
    for name in ("metrics.csv", "summary.csv"):
        merged = (tmp_path / "merged" / "folder" / name).read_bytes()
        assert merged == (tmp_path / "out" / "folder" / name).read_bytes(), name
    assert "zero+random_init" in merged.decode() and "trained" not in merged.decode()


def test_corpus_mode_labels_allowed_random_init_too(cli, write_spec, tmp_path, folder):
    save(folder, {k: v for k, v in tensors(folder).items() if not k.startswith("embeddings.position")})
    (tmp_path / "corpus.txt").write_text("dog bites man\nman bites dog\n")
    spec = write_spec("name: corpus\nmodel: {kind: hf, path: model, allow_random_init: true}\n"
                      "inputs: {file: corpus.txt, shuffles: 3}\n")  # fmt: skip
    result = cli.invoke(app, ["run", str(spec), "--out", str(tmp_path / "out"), "-q"])
    assert result.exit_code == 0, result.output
    out = tmp_path / "out" / "corpus"
    for name in ("metrics.csv", "summary.csv"):
        assert set(pd.read_csv(out / name)["encoding"]) == {"loaded+random_init", "zero+random_init"}, name
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["model_files"]["random_init"] == ["embeddings.position_embeddings.weight"]


LONG_WORDS = "antidisestablishmentarianism supercalifragilistic words"


@pytest.fixture(scope="module")
def short_positions(tmp_path_factory) -> Path:
    """A BERT with 8 positions and MiniLM's sub-word tokenizer (tokenizer.json pads and cuts to 128: never counted)."""
    from transformers import BertConfig, BertModel

    from orderlab.spec.extras import packaged_model_folder

    folder = tmp_path_factory.mktemp("short") / "model"
    config = BertConfig(hidden_size=16, num_attention_heads=2, num_hidden_layers=1, intermediate_size=32,
                        max_position_embeddings=8)  # fmt: skip
    BertModel(config).save_pretrained(folder)
    for name in ("tokenizer.json", "tokenizer_config.json", "vocab.txt", "special_tokens_map.json"):
        shutil.copy(packaged_model_folder("minilm") / name, folder / name)
    return folder


def test_a_checkpoints_sub_word_tokens_are_counted_at_validate_as_the_run_counts_them(cli, short_positions, tmp_path):
    """It was refused only at run time, as 'antidisestablishmentarianism ...: 17 tokens; expected at most 8'."""
    from orderlab.models.hf.loader import PretrainedBackend
    from orderlab.plan.token_count import subword_counts

    backend = PretrainedBackend(short_positions)
    sentences = [sentence.split() for sentence in ("dog bites man", LONG_WORDS, "The teacher's re-tested answers!")]
    counts = subword_counts(short_positions, sentences)
    assert counts is not None
    for words, count in zip(sentences, counts, strict=True):
        encoded = backend.tokenizer(words, is_split_into_words=True, add_special_tokens=True)  # as word_tokens does
        assert count + 2 == len(encoded["input_ids"])  # [CLS] ... [SEP]
    spec = tmp_path / "long.yaml"
    inputs = f"[{{sentence: dog bites man}}, {{sentence: {LONG_WORDS}, permutations: reverse}}]"
    spec.write_text(f"name: long\nmodel: {{kind: hf, path: {short_positions}}}\ninputs: {inputs}\n")
    for command in ("validate", "run"):
        result = cli.invoke(app, [command, str(spec), *(["--out", str(tmp_path)] if command == "run" else [])])
        assert result.exit_code == 2, result.output
        assert result.output == (
            f"error: {spec}:3: inputs[1].sentence: 3 words make 17 tokens with the model's 2 special token(s); its "
            "positions cover 8; expected at most 6 sub-word tokens (fewer or shorter words)\n"
        )
    assert not (tmp_path / "long").exists()


def split_by(pattern: str, short_positions: Path, tmp_path: Path) -> Path:
    """A copy of the short BERT whose tokenizer.json splits words by `pattern` (a Split pre-tokenizer)."""
    from tokenizers import Regex, Tokenizer, pre_tokenizers

    folder = tmp_path / "model"
    shutil.copytree(short_positions, folder)
    tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
    tokenizer.pre_tokenizer = pre_tokenizers.Split(Regex(pattern), "isolated")
    tokenizer.save(str(folder / "tokenizer.json"))
    return folder


def test_a_tokenizer_json_the_library_panics_on_is_one_line_at_validate(cli, short_positions, tmp_path):
    """A Split pre-tokenizer of `(a+)+$` made validate die with a Rust panic (PanicException, a BaseException)."""
    folder = split_by("(a+)+$", short_positions, tmp_path)
    spec = tmp_path / "panics.yaml"
    spec.write_text(f"name: panics\nmodel: {{kind: hf, path: {folder}}}\ninputs: [{{sentence: {'a' * 40}b c}}]\n")
    result = cli.invoke(app, ["validate", str(spec)])
    assert result.exit_code == 2, result.output
    assert result.output == (
        f"error: {folder / 'tokenizer.json'}: the tokenizers library failed on it (Onig: Regex search error: "
        "retry-limit-in-match over); expected a tokenizer.json the tokenizers library can apply\n"
    )


def test_a_tokenizer_json_whose_pattern_backtracks_for_long_is_stopped_in_one_line(
    cli, short_positions, tmp_path, monkeypatch
):
    """`(a+)+$` on words of 22 a's stays under Oniguruma's retry limit, at a third of a second a word: 40 of them
    held validate for about 14 s (the positions, 8, are checked after the count). The count runs in a child process
    stopped after its time limit (1 s here)."""
    import orderlab.plan.token_count as token_count

    monkeypatch.setattr(token_count, "TOKENIZER_SECONDS", 1.0)
    folder = split_by("(a+)+$", short_positions, tmp_path)
    spec = tmp_path / "slow.yaml"
    sentence = " ".join(f"{'a' * 22}b{i}" for i in range(40))
    spec.write_text(
        f"name: slow\nmodel: {{kind: hf, path: {folder}}}\ninputs: [{{sentence: {sentence}, permutations: reverse}}]\n"
    )
    result = cli.invoke(app, ["validate", str(spec)])
    assert result.exit_code == 2, result.output
    assert result.output == (
        f"error: {folder / 'tokenizer.json'}: the tokenizers library took over 1 s to apply it to the spec's "
        "sentences (a pattern that backtracks?); expected a tokenizer.json the tokenizers library can apply\n"
    )
