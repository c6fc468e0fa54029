"""docs/zoo.md's table of families, generated from the registry (`python -m orderlab.families.docs_table` prints it):
a family added to the registry, built in or plugged in, is a row without touching the docs by hand."""

from __future__ import annotations

from orderlab.families import FAMILIES


def markdown_table() -> str:
    """One row per registered family: its positions, causal or not, ablations, and the model_type it reads."""
    lines = [
        "| family | causal LM | positions | `position_embeddings` | config.json `model_type` |",
        "| --- | --- | --- | --- | --- |",
    ]
    for family in FAMILIES.values():
        ablations = ", ".join(family.ablations)
        types = ", ".join(f"`{kind}`" for kind in family.model_types)
        lines.append(f"| `{family.name}` | {'yes' if family.causal else 'no'} | {family.positions} | {ablations} "
                     f"| {types} |")  # fmt: skip
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(markdown_table(), end="")
