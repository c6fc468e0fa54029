"""The torch.compile path: the eager pass's numbers within round-off, eager again where no compiler works."""

from __future__ import annotations

import json

import pytest
import torch
from stacks import make_stack

from orderlab.cli import app
from orderlab.measure.adapters import compile_wanted
from orderlab.models.attention_stack import AttentionStack
from orderlab.spec.schema import Spec


def small_inputs() -> torch.Tensor:
    return torch.randn(5, 6, 16, generator=torch.Generator().manual_seed(2), dtype=torch.float64)


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # torch's compiler imports deprecated torch.jit parts
@pytest.mark.slow
def test_compiled_pass_equals_the_eager_pass_within_round_off():
    """The whole compiled path (graph capture of the blocks and encoding hooks, dynamic batch sizes). The
    backend here skips inductor's C++ build (a minute on a loaded 2-core machine); benchmarks/bench_sweep.py
    compiles with inductor and records its difference from eager (`compiled_max_difference`)."""
    eager, compiled = (make_stack("rope", d_model=16, n_heads=2, n_layers=2, dtype="float32") for _ in range(2))
    compiled.compile(backend="eager")
    with torch.inference_mode():
        expected, got = eager(small_inputs(), attention_maps=False), compiled(small_inputs(), attention_maps=False)
        again = compiled(small_inputs()[:2], attention_maps=False)  # another batch size: the same compilation
    assert again.hidden[-1].shape == (2, 6, 16)
    if compiled.compile_failure:
        pytest.skip(f"no working compiler here: {compiled.compile_failure}")
    assert compiled.compile_seconds is not None and compiled.compile_seconds > 0
    for h_eager, h_compiled in zip(expected.hidden, got.hidden, strict=True):
        torch.testing.assert_close(h_compiled, h_eager, rtol=2e-5, atol=2e-5)


def test_a_compiler_that_fails_falls_back_to_eager_and_says_why():
    eager, stack = (make_stack("sinusoidal", d_model=16, n_heads=2, n_layers=2) for _ in range(2))

    def broken(x: torch.Tensor) -> list[torch.Tensor]:
        raise RuntimeError("no C compiler found\nmore detail")

    stack.compiled = broken
    with torch.inference_mode():
        got, expected = stack(small_inputs(), attention_maps=False), eager(small_inputs(), attention_maps=False)
    assert stack.compiled is None and stack.compile_failure == "RuntimeError: no C compiler found"
    for h_eager, h_fallback in zip(expected.hidden, got.hidden, strict=True):
        torch.testing.assert_close(h_fallback, h_eager, rtol=0, atol=0)


def test_a_compiler_failing_without_a_message_falls_back_and_names_the_error():
    stack = make_stack("sinusoidal", d_model=16, n_heads=2, n_layers=1)

    def silent(x: torch.Tensor) -> list[torch.Tensor]:
        raise RuntimeError()

    stack.compiled = silent
    with torch.inference_mode():
        stack(small_inputs(), attention_maps=False)
    assert stack.compiled is None and stack.compile_failure == "RuntimeError"


def test_maps_and_hooks_never_take_the_compiled_path():
    stack = make_stack("none", d_model=16, n_heads=2, n_layers=1)
    stack.compiled = lambda x: pytest.fail("compiled path taken")  # type: ignore[assignment,return-value]
    hooks: dict[str, torch.Tensor] = {}
    with torch.inference_mode():
        assert len(stack(small_inputs()).attention) == 1
        stack(small_inputs(), attention_maps=False, hooks=hooks)
    assert "1.output" in hooks


@pytest.mark.parametrize(("setting", "words", "wanted"), [
    ("always", 3, True), ("never", 9, False), ("auto", 3, False), ("auto", 10, True),
])  # fmt: skip
def test_compilation_is_opt_in_or_automatic_for_long_runs(monkeypatch, setting, words, wanted):
    monkeypatch.delenv("ORDERLAB_COMPILE", raising=False)
    assert not compile_wanted(Spec.model_validate({"inputs": [{"sentence": "a b c d e f g h i j"}]}))  # default: off
    monkeypatch.setenv("ORDERLAB_COMPILE", setting)
    sentence = " ".join(f"w{i}" for i in range(words))
    spec = Spec.model_validate({"model": {"d_model": 256}, "inputs": [{"sentence": sentence, "permutations": "all"}]})
    assert compile_wanted(spec) is wanted  # 10! orders at d_model 256: hours by the estimate


def test_an_unknown_compile_setting_is_one_line_and_exit_2(cli, monkeypatch, tmp_path):
    monkeypatch.setenv("ORDERLAB_COMPILE", "sometimes")
    spec = tmp_path / "s.yaml"
    spec.write_text("name: s\ninputs: [{sentence: a b c}]\n")
    result = cli.invoke(app, ["run", str(spec), "--out", str(tmp_path / "out")])
    assert result.exit_code == 2
    assert "ORDERLAB_COMPILE='sometimes'; expected one of auto, always, never" in result.output


def broken_compiler(stack: AttentionStack, backend: str = "inductor") -> None:
    def fail(x: torch.Tensor) -> list[torch.Tensor]:
        raise RuntimeError("no C compiler found")

    stack.compiled = fail


def instant_compiler(stack: AttentionStack, backend: str = "inductor") -> None:
    stack.compiled = stack.fused_hidden  # the eager function in place of its compilation: the same bookkeeping


@pytest.mark.parametrize("compiler", [broken_compiler, instant_compiler])
def test_the_manifest_reports_each_compiled_stacks_compile_time_or_why_it_ran_eager(
    cli, monkeypatch, write_spec, tmp_path, compiler
):
    monkeypatch.setenv("ORDERLAB_COMPILE", "always")
    monkeypatch.setattr(AttentionStack, "compile", compiler)
    spec = write_spec("name: s\nencodings: [none, rope]\nmodel: {d_model: [8, 16], n_heads: 2, n_layers: 1}\n"
                      "inputs: [{sentence: a b c, permutations: all}]\nmetrics: [equivariance]\n")  # fmt: skip
    assert cli.invoke(app, ["run", str(spec), "--out", str(tmp_path / "out")]).exit_code == 0
    records = json.loads((tmp_path / "out" / "s" / "manifest.json").read_text())["torch_compile"]
    assert [(r["encoding"], r["d_model"]) for r in records] == [("none", 8), ("rope", 8), ("none", 16), ("rope", 16)]
    if compiler is broken_compiler:
        assert all(r["fallback"] == "RuntimeError: no C compiler found" for r in records)
    else:
        assert all(r["compile_seconds"] >= 0 and "fallback" not in r for r in records)


def test_a_run_without_compilation_has_no_compile_record(cli, monkeypatch, write_spec, tmp_path):
    monkeypatch.setenv("ORDERLAB_COMPILE", "never")
    spec = write_spec("name: s\ninputs: [{sentence: a b c}]\n")
    assert cli.invoke(app, ["run", str(spec), "--out", str(tmp_path / "out")]).exit_code == 0
    assert "torch_compile" not in json.loads((tmp_path / "out" / "s" / "manifest.json").read_text())
