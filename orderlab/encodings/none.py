"""No positional information: the stack sees a bag of words (plus a causal mask, if any)."""

from orderlab.encodings.encoding import PositionalEncoding


class NoEncoding(PositionalEncoding):
    """Adds nothing; the control against which every other encoding is measured."""

    name = "none"
    kind = "none"
    relative = False
    shares_prefixes = True
    reference = "-"
