"""What a self-contained HTML file must be: it parses with tags balanced, and it fetches nothing.

Shared by the report and drift-report tests. The SVG and XLink namespace names are identifiers,
never fetched, so they are the only URLs allowed in the text.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser

VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}
NAMESPACES = {"http://www.w3.org/2000/svg", "http://www.w3.org/1999/xlink"}
RESOURCE_ATTRIBUTES = {"src", "href", "xlink:href", "data", "poster", "srcset", "action", "formaction", "background"}


class Page(HTMLParser):
    """Tags seen, tags left open or closed out of order, and attributes that would fetch something."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.open: list[str] = []
        self.unbalanced: list[str] = []
        self.fetches: list[str] = []
        self.tags: dict[str, int] = {}

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._attributes(tag, attrs)
        if tag not in VOID:
            self.open.append(tag)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._attributes(tag, attrs)

    def handle_endtag(self, tag: str) -> None:
        if not self.open or self.open.pop() != tag:
            self.unbalanced.append(f"</{tag}>")

    def _attributes(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags[tag] = self.tags.get(tag, 0) + 1
        for name, value in attrs:
            local = value is None or value.startswith(("#", "data:"))
            if name in RESOURCE_ATTRIBUTES and not local:
                self.fetches.append(f"<{tag} {name}={value!r}>")


def parse(text: str) -> Page:
    """Parse the page; assert its tags balance and nothing in it would be fetched."""
    page = Page()
    page.feed(text)
    page.close()
    assert not page.unbalanced and not page.open, (page.unbalanced, page.open)
    assert not page.fetches, page.fetches
    urls = set(re.findall(r"(?:https?|ftp)://[^\s\"'<>)]*", text)) - NAMESPACES
    assert not urls, urls
    assert not re.search(r"@import|url\((?!#)", text), "a stylesheet that fetches"
    return page
