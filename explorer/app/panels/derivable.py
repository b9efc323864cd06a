"""Whether Show the work can derive a trace's attention cells: the one rule its panel draws by, and that the window
asks before it raises the panel for a clicked cell (without building a panel that would only say it cannot)."""
from __future__ import annotations

from explorer.app.panels.panel_words import decoder_view_unavailable


def cannot_derive(trace) -> str | None:
    """Why Show the work cannot derive `trace`'s cells (it reads a decoder's own attention: an encoder's or an
    encoder–decoder's trace has none), or None where it can."""
    return decoder_view_unavailable(trace, "Show the work")
