"""`orderlab trace` against numbers worked out by hand; `plot` and `run --plot` through the CLI;
the shipped issue-5 experiments against their committed baselines."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pandas as pd
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from orderlab.cli import app
from orderlab.core.hook_points import pattern_points
from orderlab.measure.adapters import build_adapters
from orderlab.measure.trace import trace_layer
from orderlab.models import stack_adapter
from orderlab.models.attention_stack import AttentionStack
from orderlab.models.devices import CPU
from orderlab.models.stack_builder import word_vectors
from orderlab.report.figures import drawings, read_results
from orderlab.spec.extras import installed
from orderlab.spec.load import load_spec
from orderlab.spec.schema import Spec

ROOT = Path(__file__).resolve().parents[3]
WORKED = ROOT / "experiments" / "worked_example.yaml"
E, SQRT_E = math.e, math.exp(0.5)  # e^1 = 2.7183, e^0.5 = 1.6487


def test_trace_matches_the_worked_example_by_hand():
    t = trace_layer(load_spec(WORKED).spec, "cats chase mice", layer=1)
    # X rows: cats [1,0,1,0], chase [0,1,0,1], mice [1,1,0,0]; W_Q = I so Q = X
    assert t.q[0].tolist() == [[1, 0, 1, 0], [0, 1, 0, 1], [1, 1, 0, 0]]
    # W_K swaps coordinates 0<->1 and 2<->3: k(cats) = [0,1,0,1], k(chase) = [1,0,1,0], k(mice) = [1,1,0,0]
    assert t.k[0].tolist() == [[0, 1, 0, 1], [1, 0, 1, 0], [1, 1, 0, 0]]
    # W_V keeps coordinates 0 and 1
    assert t.v[0].tolist() == [[1, 0, 0, 0], [0, 1, 0, 0], [1, 1, 0, 0]]
    # raw q_i . k_j: cats . k(chase) = 1*1 + 1*1 = 2, cats . k(mice) = 1; chase mirrors cats; mice . k(mice) = 2
    assert t.raw[0].tolist() == [[0, 2, 1], [2, 0, 1], [1, 1, 2]]
    # d_head = 4, so scaled = raw / sqrt(4) = raw / 2
    assert t.scaled[0].tolist() == [[0, 1, 0.5], [1, 0, 0.5], [0.5, 0.5, 1]]
    # softmax: cats [e^0, e^1, e^0.5] / (1 + 2.7183 + 1.6487 = 5.3670) = [0.1863, 0.5065, 0.3072]
    #          mice [e^0.5, e^0.5, e^1] / (1.6487 + 1.6487 + 2.7183 = 6.0157) = [0.2741, 0.2741, 0.4519]
    cats = [1 / (1 + E + SQRT_E), E / (1 + E + SQRT_E), SQRT_E / (1 + E + SQRT_E)]
    mice = [SQRT_E / (2 * SQRT_E + E), SQRT_E / (2 * SQRT_E + E), E / (2 * SQRT_E + E)]
    expected = torch.tensor([cats, [cats[1], cats[0], cats[2]], mice], dtype=torch.float64)
    assert torch.allclose(t.weights[0], expected, rtol=0, atol=1e-15)
    assert [round(w, 4) for w in t.weights[0, 0].tolist()] == [0.1863, 0.5065, 0.3072]
    assert [round(w, 4) for w in t.weights[0, 2].tolist()] == [0.2741, 0.2741, 0.4519]
    # output(cats) = 0.1863 v(cats) + 0.5065 v(chase) + 0.3072 v(mice) = [0.4935, 0.8137, 0, 0];
    # no residual, norm or FFN, W_O = I: the layer output is the attention output
    assert [round(v, 4) for v in t.output[0].tolist()] == [0.4935, 0.8137, 0.0, 0.0]
    assert [round(v, 4) for v in t.output[2].tolist()] == [0.7259, 0.7259, 0.0, 0.0]
    assert torch.equal(t.output, t.attended)


def test_trace_shows_the_sinusoidal_part_added_at_each_slot():
    t = trace_layer(load_spec(WORKED).spec, "cats chase mice", layer=1, encoding_index=1)
    # slot 1: [sin 1, cos 1, sin(1/100), cos(1/100)] (d = 4: frequencies 1 and 10000^(-2/4) = 1/100)
    assert torch.allclose(
        t.position[1], torch.tensor([math.sin(1), math.cos(1), math.sin(0.01), math.cos(0.01)]).double()
    )
    assert torch.equal(t.x, t.tokens + t.position)


@settings(max_examples=25, deadline=None)
@given(
    encoding=st.sampled_from(["none", "sinusoidal", "rope"]),
    norm=st.sampled_from(["pre", "post", "none"]),
    causal=st.booleans(),
    residual=st.booleans(),
    layer=st.integers(1, 3),
)
def test_trace_steps_reproduce_the_stack_output(encoding, norm, causal, residual, layer):
    spec = Spec.model_validate({
        "model": {"d_model": 8, "n_heads": 2, "n_layers": 3, "norm": norm, "causal": causal, "residual": residual},
        "encodings": [encoding], "inputs": [{"sentence": "a b c a"}],
    })  # fmt: skip
    t = trace_layer(spec, "a b c a", layer)
    (adapter,) = build_adapters(spec, CPU, Path("spec.yaml"))  # the stack the measuring loop runs
    stack = adapter.stack
    output = stack(word_vectors(spec, t.words)[None])
    assert torch.allclose(t.weights, output.attention[layer - 1][0], rtol=0, atol=1e-14)
    attended, _ = stack.attend(stack.pre_norm(output.hidden[layer - 1]), stack.layers[layer - 1])
    assert torch.allclose(t.attended, attended[0], rtol=0, atol=1e-13)


def test_a_forward_returns_the_hook_points_requested_from_its_own_pass():
    """The adapter protocol's hook requests on the stack: each asked point the stack exposes, cut to the batch (the
    pass pads it to whole row tiles), equal to the pass's own maps and states; a point it lacks is absent."""
    spec = Spec.model_validate({
        "model": {"d_model": 8, "n_heads": 2, "n_layers": 2, "causal": True}, "encodings": ["sinusoidal"],
        "inputs": [{"sentence": "a b c"}],
    })  # fmt: skip
    (adapter,) = build_adapters(spec, CPU, Path("spec.yaml"))
    assert adapter.shares_prefixes  # a causal stack: the pass without hooks shares prefixes and forms none
    sentence = adapter.sentence(["a", "b", "c"])
    orders = torch.tensor([[0, 1, 2], [2, 1, 0], [1, 0, 2]])
    request = ["tokens", "position", "1.pattern", "2.q", "2.output", "3.output"]
    with torch.inference_mode():
        asked, plain = sentence.forward(orders, request), sentence.forward(orders)
        maps = sentence.forward(orders, pattern_points(2))
    assert set(asked.hooks) == set(request) - {"3.output"} and plain.hooks == {}
    assert asked.hooks["tokens"].shape == (3, 3, 8) and asked.hooks["position"].shape == (3, 8)
    assert asked.hooks["2.q"].shape == (3, 2, 3, 4)
    assert asked.patterns() == [] and len(maps.patterns()) == 2  # one layer's map asked for: no layer list
    torch.testing.assert_close(maps.patterns()[0], asked.hooks["1.pattern"], rtol=0, atol=1e-14)  # shared vs dense
    assert torch.equal(asked.hooks["2.output"], asked.hidden[2])
    torch.testing.assert_close(asked.hidden[2], plain.hidden[2], rtol=0, atol=1e-14)  # dense vs shared prefixes


def same(tensor: torch.Tensor) -> torch.Tensor:
    return tensor


@pytest.mark.parametrize(
    "causal, request_, writes, path",
    [
        (False, [], [], "fused"),
        (False, ["1.output", "tokens"], [], "fused"),  # states: the fused kernel forms them too
        (False, ["1.attn_out", "1.mid", "2.mlp_out"], [], "fused"),
        (False, ["1.pattern", "2.pattern"], [], "explicit"),
        (False, ["2.q"], [], "explicit"),
        (False, [], ["1.attn_out"], "fused"),  # a user's function at a state: the fused kernel forms it
        (False, [], ["2.pattern"], "explicit"),  # ... at attention's own point: explicit attention
        (True, [], [], "shared"),
        (True, ["1.pattern", "2.pattern"], [], "shared"),  # the shared pass forms the maps itself
        (True, ["1.pattern", "2.pattern"], ["2.output"], "explicit"),  # a write: every order computed whole
        (True, ["2.output"], [], "fused"),
        (True, ["1.scores"], [], "explicit"),
    ],
)  # fmt: skip
def test_a_pass_leaves_its_fast_path_only_for_points_the_fast_path_cannot_form(
    causal, request_, writes, path, monkeypatch
):
    """Attention maps are hook points (one channel); asking for hooks takes a pass to explicit attention only when
    one of them, read or written, is attention's own, and off prefix sharing only when it is not a pattern or a
    user's function writes a point (later slots would see it)."""
    spec = Spec.model_validate({
        "model": {"d_model": 8, "n_heads": 2, "n_layers": 2, "causal": causal}, "encodings": ["none"],
        "inputs": [{"sentence": "a b c"}],
    })  # fmt: skip
    spec = spec.model_copy(update={"model": spec.stack.model_copy(update={"user_hooks": dict.fromkeys(writes, "f")})})
    (adapter,) = build_adapters(spec, CPU, Path("spec.yaml"), user_hooks=dict.fromkeys(writes, same))
    taken: list[str] = []
    explicit, shared = AttentionStack.attend, stack_adapter.shared_prefix_pass
    monkeypatch.setattr(AttentionStack, "attend", lambda *a, **k: taken.append("explicit") or explicit(*a, **k))
    monkeypatch.setattr(stack_adapter, "shared_prefix_pass", lambda *a: taken.append("shared") or shared(*a))
    with torch.inference_mode():
        passed = adapter.sentence(["a", "b", "c"]).forward(torch.tensor([[0, 1, 2], [2, 1, 0]]), request_)
    assert (taken[0] if taken else "fused") == path
    assert set(passed.hooks) == set(request_)
    assert set(adapter.hook_points) >= {"tokens", "position", "q", "k", "scores", "pattern", "attn_out", "output"}
    assert adapter.label == ("none+user_hook" if writes else "none")


def test_trace_cli_prints_tables_and_writes_csv(tmp_path):
    result = CliRunner().invoke(app, ["trace", str(WORKED), "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert "0.5065" in result.output and "softmax weights" in result.output
    table = pd.read_csv(tmp_path / "worked_example_trace" / "input0-layer1-none.csv")
    weights = table[(table["quantity"] == "weights") & (table["slot"] == 0)]["value"].round(4).tolist()
    assert weights == [0.1863, 0.5065, 0.3072]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--layer", "2"], "--layer 2: the stack has 1 layer(s); expected 1..1"),
        (["--input", "1"], "--input 1: the spec has 1 input(s); expected 0..0"),
        (["--encoding", "rpoe"], "--encoding 'rpoe' is not in the spec; expected one of none, sinusoidal"),
    ],
)
def test_trace_cli_refuses_bad_choices_in_one_line(tmp_path, args, message):
    result = CliRunner().invoke(app, ["trace", str(WORKED), "--out", str(tmp_path), *args])
    assert result.exit_code == 2
    assert message in result.output


@pytest.mark.slow
def test_run_with_plot_writes_non_empty_figures(tmp_path):
    spec = tmp_path / "figs.yaml"
    spec.write_text(
        "model: {d_model: 16, n_heads: 2, n_layers: 2, causal: [false, true]}\n"
        "encodings: [none]\n"
        "inputs: [{sentence: the cat saw the dog, permutations: prefixes}]\n"
        "metrics: [equivariance, prefix_invariance, repeated_words, attention, decodability]\n"
        "decodability: {sentences: 32, length: 4}\n"
    )
    result = CliRunner().invoke(app, ["run", str(spec), "--out", str(tmp_path), "--plot", "--quiet"])
    assert result.exit_code == 0, result.output
    figures = sorted(p.name for p in (tmp_path / "figs" / "figures").glob("*.png"))
    heads = [f"attention_causal-{c}_none_layer{layer}.png" for c in ("false", "true") for layer in (1, 2)]
    assert figures == sorted([*heads, "decodability.png", "metrics_by_displacement.png", "metrics_by_layer.png"])
    manifest = json.loads((tmp_path / "figs" / "figures" / "manifest.json").read_text())
    assert manifest["files"] == sorted([*figures, "manifest.json"]) and manifest["written_by"] == {"command": "plot"}
    for name in figures:
        assert (tmp_path / "figs" / "figures" / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    again = CliRunner().invoke(app, ["plot", str(tmp_path / "figs")])
    assert again.exit_code == 0 and again.output.count("wrote") == len(figures)


def test_plot_refuses_a_folder_without_results(tmp_path):
    result = CliRunner().invoke(app, ["plot", str(tmp_path)])
    assert result.exit_code == 2
    assert "not a results folder" in result.output


@pytest.mark.parametrize("name", ["causal_prefix", "residual_position", "repeated_words", "worked_example"])
def test_shipped_experiment_reproduces_its_baseline(tmp_path, name):
    result = CliRunner().invoke(app, ["run", str(ROOT / "experiments" / f"{name}.yaml"), "--out", str(tmp_path), "-q"])
    assert result.exit_code == 0, result.output
    for table in ("metrics", "summary"):
        fresh = pd.read_csv(tmp_path / name / f"{table}.csv", keep_default_na=False)
        baseline = pd.read_csv(ROOT / "results" / name / f"{table}.csv", keep_default_na=False)
        pd.testing.assert_frame_equal(fresh, baseline, check_exact=False, rtol=1e-6, atol=1e-12)


# --- plot --format: one or several formats, the others' figures kept -------------------------------------------


def figure_files(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted((folder / "figures").iterdir()) if p.name != "manifest.json"}


def test_plot_in_one_format_keeps_the_figures_of_the_others(tmp_path):
    folder = tmp_path / "worked_example"
    shutil.copytree(ROOT / "results" / "worked_example", folder)
    stems = ["attention_none_layer1", "attention_sinusoidal_layer1", "metrics_by_displacement", "metrics_by_layer"]
    first = CliRunner().invoke(app, ["plot", str(folder), "--format", "png,svg"])
    assert first.exit_code == 0, first.output
    assert first.output.count("wrote") == 8
    pictures = figure_files(folder)
    assert sorted(pictures) == sorted(f"{stem}.{kind}" for stem in stems for kind in ("png", "svg"))
    again = CliRunner().invoke(app, ["plot", str(folder), "--format", "pdf"])
    assert again.exit_code == 0, again.output
    after = figure_files(folder)
    assert {name: after[name] for name in pictures} == pictures  # the PNG and SVG figures, byte for byte
    assert sorted(set(after) - set(pictures)) == [f"{stem}.pdf" for stem in stems]
    assert all(after[f"{stem}.pdf"].startswith(b"%PDF-") for stem in stems)
    manifest = json.loads((folder / "figures" / "manifest.json").read_text())
    assert manifest["files"] == sorted([*after, "manifest.json"])


@pytest.mark.parametrize(("formats", "message"), [("jpg", "'jpg' is not a figure format"),
                                                   ("png,png", "a format is named twice")])  # fmt: skip
def test_plot_refuses_an_unknown_or_repeated_format_in_one_line(tmp_path, formats, message):
    folder = tmp_path / "worked_example"
    shutil.copytree(ROOT / "results" / "worked_example", folder)
    result = CliRunner().invoke(app, ["plot", str(folder), "--format", formats])
    assert result.exit_code == 2
    assert message in result.output and "expected png, svg, pdf" in result.output
    assert not (folder / "figures").exists()


@pytest.mark.skipif(not installed("transformers"), reason="needs the optional extra: orderlab[hf]")
def test_a_causal_lm_s_rate_and_mean_measured_at_its_last_layer_are_bars_on_linear_axes(tmp_path):
    spec = tmp_path / "lm.yaml"
    spec.write_text(
        "name: lm\nmodel: {kind: hf, family: gpt2, d_model: 16, n_heads: 2, n_layers: 2, dtype: float64}\n"
        "inputs: [{sentence: the dog bites the man, permutations: prefixes}]\n"
        "metrics: [prefix_invariance, lm_logprob]\n"
    )
    result = CliRunner().invoke(app, ["run", str(spec), "--out", str(tmp_path), "--quiet", "--plot"])
    assert result.exit_code == 0, result.output
    folder = tmp_path / "lm"
    assert (folder / "figures" / "metrics_by_layer.png").is_file()
    (drawing,) = [d for d in drawings(folder, read_results(folder)) if d.stem == "metrics_by_layer"]
    panels = {" ".join(ax.get_title().split()): ax for ax in drawing.figure.axes if ax.get_visible()}
    rows = pd.read_csv(folder / "metrics.csv")
    moved = rows["permuted"] != "the dog bites the man"  # the rate is over the reorderings, never the identity
    flags = rows[(rows["metric"] == "permutation_preferred") & (rows["encoding"] == "seeded") & moved]["value"]
    for title in ("logprob_change (mean over permutations, layer 2)", "permutation_preferred (rate over distinct "
                  "reorderings, layer 2)"):  # fmt: skip
        ax = panels[title]
        assert ax.get_yscale() == "linear" and not ax.get_lines()  # a bar per ablation, no lone dot on a layer axis
        assert [tick.get_text() for tick in ax.get_xticklabels()] == ["seeded", "zero"]
    rates = {tick.get_text(): bar.get_height() for tick, bar in zip(ax.get_xticklabels(), ax.patches, strict=True)}
    assert rates["seeded"] == pytest.approx(flags.mean())
    assert panels["prefix_invariance"].get_yscale() == "log"


# --- figures: every line visible, titles that say what was tested, rates drawn as rates -------------------------


def drawn(name: str, kind: str):
    folder = ROOT / "results" / name
    (figure,) = [d.figure for d in drawings(folder, read_results(folder)) if d.kind == kind]
    figure.draw_without_rendering()  # ticks and labels as a saved file has them
    return figure


def test_task_accuracy_shows_every_encoding_and_names_those_that_coincide():
    figure = drawn("trained_first_word", "task")
    ax = figure.axes[0]
    lines = [line for line in ax.get_lines() if not line.get_label().startswith(("_", "chance"))]
    assert len(lines) == 6 and len({line.get_marker() for line in lines}) == 6  # a marker each
    assert len({tuple(line.get_xdata()) for line in lines}) == 6  # each a little apart: none hides another
    note = " ".join(ax.get_legend().get_title().get_text().split())
    assert "learned, rope, sinusoidal coincide (drawn side by side)" in note
    title = " ".join(ax.get_title().split())
    assert "no other length tested" in title and "carry to" not in title  # only the trained lengths were tested
    assert "(4-8 words;" in title
    assert [tick.get_text() for tick in ax.get_xticklabels()] == ["4", "5", "6", "7", "8"]  # whole lengths, tested


def test_lm_scores_measured_at_one_layer_are_bars_and_a_rate_stays_within_0_1():
    pytest.importorskip("matplotlib")
    figure = drawn("zoo_causal", "metrics")
    panels = {ax.get_title().split("\n")[0].split(" (")[0]: ax for ax in figure.axes if ax.get_visible()}
    rate = panels["permutation_preferred"]
    assert len(rate.patches) == 6 and not rate.get_lines()  # a bar per family x ablation, no lone dots
    assert "rate over distinct reorderings, layer" in rate.get_title() and rate.get_ylim() == (0, 1.1)
    assert all(0 <= bar.get_height() <= 1 for bar in rate.patches)


LAYER_FIGURES = [("dog_bites_man", "metrics"), ("zoo_causal", "metrics"), ("causal_prefix", "metrics"),
                 ("residual_position", "decodability"), ("trained_causal_position", "decodability")]  # fmt: skip


@pytest.mark.parametrize(("name", "kind"), LAYER_FIGURES)
@pytest.mark.slow
def test_layer_axes_are_whole_layers_and_every_title_lies_within_the_figure(name, kind):
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    figure = drawn(name, kind)
    renderer = FigureCanvasAgg(figure).get_renderer()
    layer_axes = [ax for ax in figure.axes if ax.get_visible() and ax.get_xlabel().startswith("layer")]
    assert layer_axes, name
    for ax in layer_axes:
        low, high = ax.get_xlim()
        ticks = [tick for tick in ax.get_xticks() if low <= tick <= high]
        assert ticks and all(tick == round(tick) for tick in ticks), (ax.get_title(), ticks)  # no layer 0.5
    for ax in figure.axes:
        if ax.get_visible() and ax.get_title():
            box = ax.title.get_window_extent(renderer)
            assert box.x0 >= 0 and box.x1 <= figure.bbox.width, ax.get_title()  # zoo_causal's bar title ran off


@pytest.mark.slow
def test_every_log_panel_shows_at_least_two_labelled_ticks():
    figure = drawn("dog_bites_man", "metrics")
    for ax in figure.axes:
        if not ax.get_visible() or ax.get_yscale() != "log":
            continue
        low, high = ax.get_ylim()
        shown = [t for t in ax.yaxis.get_major_ticks() if t.label1.get_text() and low <= t.get_loc() <= high]
        assert len(shown) >= 2, (ax.get_title(), [t.label1.get_text() for t in shown])
