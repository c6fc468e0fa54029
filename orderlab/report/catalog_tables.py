"""The catalog (`orderlab encodings`, `orderlab models`) and `orderlab properties`, drawn as tables that fit any
width."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pandas as pd
from rich import box
from rich.table import Table
from rich.text import Text

from orderlab.report.fitting import Column, fitted_tables

if TYPE_CHECKING:
    from orderlab.encodings.entries import EncodingEntry
    from orderlab.measure.hook_listing import HookListing
    from orderlab.models.hf.zoo import ZooEntry

PROPERTY_PASS = "pass"
PROPERTY_HEADERS = {
    "deterministic": "deter-\nministic",
    "generalises": "gener-\nalises",
    "relative-aware": "relative-\naware",
}


def short_number(x: float) -> str:
    """Two significant digits, as short as they go: 0.23, 93, 3e-16."""
    return f"{x:.0e}" if 0 < abs(x) < 1e-3 else f"{x:.2g}"


def property_cell(figure: float, verdict: str, note: str) -> Text:
    """'✓ 1.5' in green for a pass, '✗ 0' in red for a fail ('✗ error' when it could not run)."""
    shown = "error" if note.startswith("error") else ("n/a" if figure != figure else short_number(figure))
    if verdict == PROPERTY_PASS:
        return Text(f"✓ {shown}", style="green")
    return Text(f"✗ {shown}", style="red")


def properties_tables(frame: pd.DataFrame, properties: tuple[str, ...], title: str, width: int) -> list[Table]:
    """Rows: encodings; columns: the six properties, as many per table as fit `width`; cells: verdict and figure."""
    groups = list(frame.groupby("encoding", sort=False))
    keys = [Column("encoding", [str(encoding) for encoding, _ in groups], justify="left")]
    values = []
    for name in properties:
        shown = [next(row for _, row in rows.iterrows() if row["property"] == name) for _, rows in groups]
        cells: list[Text | str] = [property_cell(row["figure"], row["verdict"], str(row["note"])) for row in shown]
        values.append(Column(PROPERTY_HEADERS.get(name, name), cells))
    caption = "figures and pass rules: orderlab properties --help"
    return fitted_tables(title, caption, keys, values, width, table_box=box.SIMPLE_HEAD, pad_edge=False)


# Below this console width a listing's rows stack (one cell a row for the short fields, one for the prose): its
# five columns side by side would leave each too narrow for a reference such as arXiv:2104.09864.
WIDE_LISTING_COLUMNS = 120


def encodings_table(entries: list[EncodingEntry], width: int = WIDE_LISTING_COLUMNS) -> Table:
    """One row per encoding: name, kind, absolute/relative, parameters with defaults, reference; narrower than
    WIDE_LISTING_COLUMNS, name, kind and position stack in one column and parameters over reference in the other."""
    wide = width >= WIDE_LISTING_COLUMNS
    out = Table(title="positional encodings", title_justify="left", show_lines=True)
    if wide:
        out.add_column("name", no_wrap=True, style="bold")
        out.add_column("kind", no_wrap=True)
        out.add_column("position", no_wrap=True)
        out.add_column("parameters (default)")
        out.add_column("reference")
    else:
        out.add_column("encoding", no_wrap=True)
        out.add_column("parameters (default); reference")
    for entry in entries:
        params = "\n".join(f"{name}={default}: {description}" for name, default, description in entry.params) or "-"
        if wide:  # Text: no markup in docs
            out.add_row(Text(entry.name), entry.kind, entry.position, Text(params), Text(entry.reference))
        else:
            named = Text.assemble((entry.name, "bold"), f"\n{entry.kind}\n{entry.position}")
            out.add_row(named, Text(f"{params}\n\n{entry.reference}"))
    return out


def models_table(entries: list[ZooEntry], broken: dict[str, str] | None = None) -> Table:
    """One row per model family of the zoo: its name and kind beside what it holds (positions, ablations, hook
    points, local real weights), stacked so that no name is broken at any width; plug-ins that cannot be used, each
    with why, in the caption."""
    caption = "broken plug-ins (specs naming them are refused):\n" + "\n".join(broken.values()) if broken else None
    out = Table(title="model families (model: {kind: hf, family: NAME})", title_justify="left", show_lines=True,
                caption=caption, caption_justify="left")  # fmt: skip
    out.add_column("family", no_wrap=True)
    out.add_column("positions, ablations, hook points per layer (orderlab trace), real weights found locally")
    for entry in entries:
        kind = "causal LM" if entry.causal else "encoder"
        ablations = "\n".join(f"  {name}: {what}" for name, what in entry.ablations.items())
        weights = ", ".join(entry.weights) or "none (seeded weights only)"
        details = (
            f"positions: {entry.positions}\n\nposition_embeddings (ablations):\n{ablations}\n\n"
            f"hook points: {', '.join(entry.hook_points)}\n\nreal weights: {weights}"
        )
        out.add_row(Text.assemble((entry.family, "bold"), f"\n{kind}"), Text(details))
    return out


def hooks_table(listing: HookListing) -> Table:
    """One row per hook point of a family (or the stack): its shape, whether a user's function may write it, its
    TransformerLens name and its nnsight path."""
    out = Table(title=f"hook points of {listing.model}; every layer L has those named 1.*", title_justify="left")
    for column in ("point", "shape", "write", "TransformerLens", *(("nnsight",) if listing.family != "stack" else ())):
        out.add_column(column, overflow="fold")
    for point in listing.points:
        cells = [point.name, str(point.shape), "yes" if point.writable else "read only", point.transformer_lens or "—"]
        out.add_row(*cells, *((point.nnsight,) if listing.family != "stack" else ()))
    return out
