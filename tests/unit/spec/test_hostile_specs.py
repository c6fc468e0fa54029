"""Hostile spec files: the loader returns a validated spec or raises OrderlabError, one line a problem, never a
traceback."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from orderlab.errors import OrderlabError, SpecError, SpecErrors
from orderlab.spec.load import load_spec
from orderlab.spec.schema import Spec
from orderlab.spec.yamlsource import MAX_DEPTH, MAX_EXPANDED_NODES, parse_yaml

ROOT = Path(__file__).resolve().parents[3]
SHIPPED = [p.read_text() for p in sorted((ROOT / "experiments").glob("*.yaml"))]
FUZZ = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# Keys the loader knows, so random documents reach deep into validation, not only "unknown key".
KEYS = [
    "name", "description", "seed", "model", "embeddings", "encodings", "inputs", "probes", "metrics", "check",
    "d_model", "n_heads", "n_layers", "residual", "norm", "ffn", "ffn_mult", "causal", "scale", "dtype",
    "weights", "W_Q", "W_K", "W_V", "W_O", "kind", "lowercase", "vectors", "sentence", "permutations",
    "random", "params", "base", "rtol", "atol",
]  # fmt: skip
WORDS = ["all", "reverse", "swaps", "shifts", "identity", "none", "rope", "sinusoidal", "float32", "float64",
         "pre", "post", "explicit", "random", "dog bites man", "a", "", "x.y:Z", "os:path", ".x:Y"]  # fmt: skip

scalars = (
    st.none()
    | st.booleans()
    | st.integers(-(10**20), 10**20)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.sampled_from(WORDS)
    | st.text(max_size=12)
)
# Keys also drawn from characters that are awkward in a one-line message (line breaks, tabs, dots).
keys = st.sampled_from(KEYS) | st.text(max_size=8) | st.text(alphabet="ab\n\r\t\x0b\x85\u2028 .:[]#", max_size=4)
documents = st.recursive(
    scalars,
    lambda children: st.lists(children, max_size=5) | st.dictionaries(keys, children, max_size=6),
    max_leaves=40,
)
YAML_PIECES = [":", "- ", "[", "]", "{", "}", "&a ", "*a", "!!str ", "!!binary ", "!!python/object ", "<<: ",
               "|", ">", "'", '"', "#", "%", "@", "`", "\t", "\n", "  ", "---\n", "...\n", "? ", "0x", "1e999",
               ".nan", "~", "\\", "\x00", "\ufeff", "é"]  # fmt: skip


@pytest.fixture(scope="module")
def folder() -> Iterator[Path]:
    with tempfile.TemporaryDirectory() as name:
        yield Path(name)


def assert_loads_or_fails_in_one_line(folder: Path, content: str | bytes) -> None:
    path = folder / "fuzzed.yaml"
    path.write_bytes(content if isinstance(content, bytes) else content.encode("utf-8", "surrogatepass"))
    try:
        loaded = load_spec(path)
    except OrderlabError as error:
        problems = error.problems if isinstance(error, SpecErrors) else [error]
        for problem in problems:  # every problem one line, naming the file
            message = str(problem)
            assert message and "\n" not in message and "\r" not in message, repr(message)
            assert message.startswith(str(path)), message
    else:
        assert isinstance(loaded.spec, Spec)


@FUZZ
@given(document=documents)
def test_random_yaml_documents_load_or_fail_in_one_line(folder: Path, document):
    assert_loads_or_fails_in_one_line(folder, yaml.safe_dump(document, allow_unicode=True))


@FUZZ
@given(text=st.text(max_size=300))
def test_random_text_loads_or_fails_in_one_line(folder: Path, text: str):
    assert_loads_or_fails_in_one_line(folder, text)


@FUZZ
@given(content=st.binary(max_size=200))
def test_random_bytes_load_or_fail_in_one_line(folder: Path, content: bytes):
    assert_loads_or_fails_in_one_line(folder, content)


@st.composite
def text_mutations(draw) -> str:
    """A shipped spec with a few characters deleted, inserted or replaced by YAML syntax."""
    text = draw(st.sampled_from(SHIPPED))
    for _ in range(draw(st.integers(1, 4))):
        at = draw(st.integers(0, len(text)))
        cut = draw(st.integers(0, 12))
        piece = draw(st.sampled_from(YAML_PIECES) | st.text(max_size=4))
        text = text[:at] + piece + text[at + cut :]
    return text


@FUZZ
@given(text=text_mutations())
def test_text_mutations_of_shipped_specs_load_or_fail_in_one_line(folder: Path, text: str):
    assert_loads_or_fails_in_one_line(folder, text)


@st.composite
def value_mutations(draw):
    """A shipped spec with one value somewhere in it replaced by random data, or one key dropped."""
    data = yaml.safe_load(draw(st.sampled_from(SHIPPED)))
    node, key = data, None
    while True:  # walk down a random path, stopping at some depth
        children = list(node.items()) if isinstance(node, dict) else list(enumerate(node))
        if not children:
            break
        key, child = draw(st.sampled_from(children))
        if not isinstance(child, dict | list) or draw(st.booleans()):
            break
        node = child
    if key is not None:
        if isinstance(node, dict) and draw(st.booleans()):
            del node[key]
        else:
            node[key] = draw(documents)
    return data


@FUZZ
@given(data=value_mutations())
@pytest.mark.slow
def test_value_mutations_of_shipped_specs_load_or_fail_in_one_line(folder: Path, data):
    assert_loads_or_fails_in_one_line(folder, yaml.safe_dump(data, allow_unicode=True))


def test_shipped_specs_load():
    for path in sorted((ROOT / "experiments").glob("*.yaml")):
        assert load_spec(path).spec.name


# --- alias bombs and deep nesting -----------------------------------------------------------------


def billion_laughs(levels: int, width: int = 10) -> str:
    """width ** levels values from a document of a few hundred bytes."""
    lines = ['a0: &a0 ["lol"]']
    for level in range(1, levels + 1):
        lines.append(f"a{level}: &a{level} [" + ", ".join([f"*a{level - 1}"] * width) + "]")
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("levels", [9, 30])
def test_billion_laughs_is_refused_without_expanding_it(levels: int):
    # 10^30 values: were the loader to expand aliases, this test would never finish.
    with pytest.raises(SpecError, match=f"expands to more than {MAX_EXPANDED_NODES:,} values"):
        parse_yaml(billion_laughs(levels), "bomb.yaml")


def test_billion_laughs_inside_a_spec_field_is_refused_in_one_line(tmp_path: Path):
    path = tmp_path / "bomb.yaml"
    path.write_text(billion_laughs(12).replace("a12:", "probes:"))
    with pytest.raises(SpecError) as caught:
        load_spec(path)
    assert str(caught.value).startswith(f"{path}: the document expands")


def test_modest_aliases_are_still_allowed():
    document = parse_yaml(billion_laughs(3))  # 1,000 values: an ordinary use of anchors
    assert len(document.data["a3"]) == 10


def test_yes_no_on_off_are_words_and_only_true_and_false_are_booleans(tmp_path: Path):
    """YAML 1.2's booleans: under YAML 1.1, `probes: [[on, off]]` reached the spec as [True, False]."""
    path = tmp_path / "words.yaml"
    path.write_text("name: words\nmodel: {d_model: 8, n_heads: 2, causal: true, residual: False}\n"
                    "inputs: [{sentence: yes no on off y n}]\nprobes: [[on, off], [no, on]]\n")  # fmt: skip
    with pytest.raises(SpecError, match=r"probes\[0\]: 'off' is not a reordering of 'on'"):
        load_spec(path)
    spec = load_spec(write(tmp_path, path.read_text().replace("[[on, off], [no, on]]", "[[no on, on no]]"))).spec
    assert spec.sentences[0].sentence == "yes no on off y n" and spec.probes[0].pair == ("no on", "on no")
    assert spec.model.causal is True and spec.model.residual is False
    assert parse_yaml("a: [TRUE, false, yes, On]").data == {"a": [True, False, "yes", "On"]}


def write(folder: Path, text: str) -> Path:
    path = folder / "spec.yaml"
    path.write_text(text)
    return path


@pytest.mark.parametrize("text", ["[" * 50_000, "a: " + "[" * 5_000 + "]" * 5_000, "- " * 5_000 + "x", "{a: " * 3_000])
def test_deep_nesting_is_refused_in_one_line_not_a_recursion_error(text: str):
    with pytest.raises(SpecError, match=f"nested more than {MAX_DEPTH} levels deep"):
        parse_yaml(text, "deep.yaml")


@pytest.mark.parametrize("words", [10, 5_000])
def test_all_permutations_of_a_long_sentence_is_refused_with_the_reason(tmp_path: Path, words: int):
    path = tmp_path / "long.yaml"
    path.write_text("inputs: [{sentence: " + " ".join(["w"] * words) + ", permutations: all}]\n")
    with pytest.raises(SpecError, match=f"'all' would be {words}! .*expected {{random: K}} instead"):
        load_spec(path)


def test_encoding_module_that_cannot_be_imported_is_a_one_line_error(tmp_path: Path):
    path = tmp_path / "relative.yaml"
    path.write_text('inputs: [{sentence: a b}]\nencodings: [".relative:Name"]\n')
    with pytest.raises(SpecError, match=r"encodings\[0\]: encoding '.relative:Name' raised TypeError at import"):
        load_spec(path)
