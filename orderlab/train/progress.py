"""The one shape of progress that long work reports, so compute stays free of the terminal: report/ draws it.

Here, in the lowest layer that reports progress (training), so every layer above takes the same types.
"""

from __future__ import annotations

from collections.abc import Callable

Progress = Callable[[int, int], None]  # (done, total) units of work: sequences, training steps, specs
Note = Callable[[str], None]  # what the work is doing now, shown beside the bar: 'training rope: step 40/200, loss 0.5'
