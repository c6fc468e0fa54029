"""The one shape of progress that long work reports, so compute stays free of the terminal: report/ draws it.

In spec/, the bottom layer, so that every layer that reports progress (training, measuring, checking, figures)
takes the same types. Imports nothing.
"""

from __future__ import annotations

from collections.abc import Callable

Progress = Callable[[int, int], None]  # (done, total) units of work: sequences, training steps, specs
Note = Callable[[str], None]  # what the work is doing now, shown beside the bar: 'training rope: step 40/200, loss 0.5'
