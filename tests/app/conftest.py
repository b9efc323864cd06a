"""The fixtures the app's tests share. pytest finds them here, so a test module names them as parameters and
imports none of them (an imported fixture is shadowed by the parameter of the same name).

A module that needs another fixture of the same name defines or imports its own, which takes precedence:
test_why_panels's `tiny` (the tiny Llama with its trace) is one. `store_home` is left out on purpose: it is
autouse, and the modules that want their own store import it."""
import pytest

from explorer.app.state.session import Session
from tests.app.screen_fit import SCREENS, emulated_screen
from tests.app.shared_window import window_recording_loads  # noqa: F401
from tests.app.test_export_legibility import recorded  # noqa: F401
from tests.app.test_window import dialogs, tiny, window  # noqa: F401
from tests.app.text_contrast import restore_palette  # noqa: F401
from tests.cli.test_pull_models import catalog, tiny_gguf  # noqa: F401


@pytest.fixture(params=list(SCREENS), ids=list(SCREENS))
def screen(request):
    """Each available screen the window must fit (1366x768, 1920x1080), emulated; yields its size."""
    with emulated_screen(SCREENS[request.param]) as available:
        yield available.size()


@pytest.fixture
def open_panel(qtbot):
    """open_panel(PanelClass, info, size): the panel on a Session of its own that holds the model `info`,
    shown at `size` (width, height) and exposed."""
    def open_(panel_class, info, size: tuple[int, int]):
        session = Session()
        session.set_model(info)
        panel = panel_class(session)
        qtbot.addWidget(panel)
        panel.resize(*size)
        panel.show()
        qtbot.waitExposed(panel)
        return panel
    return open_
