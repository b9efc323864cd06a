"""A shown main window on the fake core that draws a synthetic trace (tests/app/synthetic_trace.py): for the
tests of what the window draws and exports, which need a trace of chosen dimensions but no model."""
from __future__ import annotations

from contextlib import contextmanager

from tests.app.shared_window import make_window
from tests.app.synthetic_trace import WORDS


def show_trace(session, trace) -> None:
    """Give `session` the synthetic trace's model and trace, its token ids shown as the words of WORDS."""
    session.set_token_display(lambda token_id: WORDS[token_id % len(WORDS)])
    session.set_model(trace.model)
    session.set_trace(trace)


@contextmanager
def window_showing(qtbot, tmp_path, trace, size: tuple[int, int] = (1400, 900)):
    """Yield a MainWindow of `size` (make_window's: settings under tmp_path) drawing `trace`; closed afterwards."""
    window = make_window(qtbot, tmp_path)
    show_trace(window.session, trace)
    window.resize(*size)
    qtbot.wait(100)
    try:
        yield window
    finally:
        window.close()
