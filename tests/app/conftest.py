"""The fixtures the app's tests share. pytest finds them here, so a test module names them as parameters and
imports none of them (an imported fixture is shadowed by the parameter of the same name).

A fixture shared by several modules lives here under a name of its own (`decoder_2048`, `decoder_8000`,
`long_panel`, `kv_lab`, `bare_session`, `words_session`, `real_core_window`, `palette_window`...), so that no
module imports a fixture from another. `store_home` is not autouse: a module that wants the model store in its
test's folder says `pytestmark = pytest.mark.usefixtures("store_home")` (others keep the run's isolated store, with
the pulled models). Plain helpers are modules a test imports: tests/app/long_prompt.py (the long prompts' lengths),
tests/app/window_helpers.py (new_window, idle, opened, step, prefilled, PROMPT), projector.py (the 1366x768
projector) and why_helpers.py (a Why panel once answered). The pull catalog's fixtures (catalog, tiny_gguf),
shared with the CLI's tests, are tests/pull_catalog.py, a plugin of tests/conftest.py."""
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from PySide6.QtCore import QEvent, QSettings
from PySide6.QtWidgets import QApplication, QMessageBox

from explorer.app.panels import AttentionPanel
from explorer.app.panels.kv_lab import KVLabPanel
from explorer.app.start import launch
from explorer.app.state.session import Session
from explorer.app.window.main_window import MainWindow
from explorer.app.window.settings import AppSettings
from explorer.cli import build_parser
from explorer.drawing import export
from explorer.views import long_maps
from tests.app.layout_probe import open_window
from tests.app.long_prompt import N_ATTENTION, N_PANELS, SIDE, long_decoder, spy
from tests.app.projector import PROJECTOR, wait_idle
from tests.app.screen_fit import SCREENS, emulated_screen, settle
from tests.app.shared_window import (
    make,
    window_recording_loads,  # noqa: F401
)
from tests.app.synthetic_trace import WORDS
from tests.app.text_contrast import label_rects, restore_palette  # noqa: F401
from tests.app.tiny_model import make_tiny_llama
from tests.app.window_helpers import new_window


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


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """A tiny random Llama folder (tests/app/tiny_model.py), one per test module."""
    return make_tiny_llama(tmp_path_factory.mktemp("models") / "tiny-llama")


@pytest.fixture
def store_home(monkeypatch, tmp_path):
    """The model store (recent list, autosave) lives in the test's folder, never in ~/.cache."""
    monkeypatch.setenv("TRANSFORMER_EXPLORER_HOME", str(tmp_path / "store"))
    return tmp_path / "store"


@pytest.fixture
def dialogs(monkeypatch):
    """Every warning shown, and the answer every question gets (Yes unless a test changes it)."""
    shown = {"warnings": [], "questions": [], "answer": QMessageBox.StandardButton.Yes}
    monkeypatch.setattr(QMessageBox, "warning", lambda parent, title, text, *a: shown["warnings"].append(text))

    def question(parent, title, text, *args):
        shown["questions"].append(text)
        return shown["answer"]

    monkeypatch.setattr(QMessageBox, "question", question)
    return shown


@pytest.fixture
def window(qtbot, tmp_path, dialogs):
    """The main window on its own settings file and autosave in the test's folder, closed after the test."""
    window = new_window(qtbot, tmp_path)
    yield window
    window.close()


@pytest.fixture
def projector_window(qapp, tmp_path, monkeypatch):
    """The layout probe's window (a 30-layer trace) laid out for a 1366x768 screen (tests/app/projector.py)."""
    monkeypatch.setattr(QMessageBox, "warning", lambda *a: None)
    font = QApplication.font()
    with emulated_screen(PROJECTOR):
        window = open_window(str(tmp_path / "settings.ini"))
        settle(0.8)
        yield window
        wait_idle(window)              # a job's late answer (an error) is shown while dialogs are still recorded
        QApplication.setFont(font)
        settle(0.2)                    # the panels fit themselves to the font again while the window lives
        window.close()
        window.deleteLater()           # deleted now, not by the interpreter at exit in whatever order it picks
        QApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete)
        settle(0.2)


@pytest.fixture
def recorded(monkeypatch):
    """The text rectangles of every figure export.save_figure writes, by file name."""
    rects = {}
    save = export.save_figure

    def recording(figure, path, width, height):
        rects[Path(path).name] = label_rects(figure)
        return save(figure, path, width, height)

    monkeypatch.setattr(export, "save_figure", recording)
    return rects


@pytest.fixture(scope="module")
def traced_llama():
    """A tiny random Llama (tests/core/conftest.py) and its trace of 9 prompt tokens and one step."""
    # torch: imported only for the modules that ask for it
    from explorer.core.decode import Decoder
    from explorer.core.runtime import from_tensors
    from tests.core.conftest import make_hf_model

    hf = make_hf_model("llama", seed=5)
    loaded = from_tensors(hf.config.to_dict(), hf.state_dict(), name="tiny-llama")
    decoder = Decoder(loaded)
    decoder.prefill(np.arange(9) * 7 % 90)
    decoder.step()
    return loaded, decoder.trace


@pytest.fixture
def session(qtbot, traced_llama):
    """A Session holding traced_llama's model, showing some tokens as a no-break space."""
    session = Session()
    session.set_model(traced_llama[0].info)
    session.set_token_display(lambda token_id: "\xa0" if token_id % 3 == 0 else f"t{token_id}")
    return session


@pytest.fixture
def launched(monkeypatch, tmp_path):
    """Run `launch(args)` with settings in tmp_path; its event loop runs until `until(window)` holds."""
    settings = AppSettings(QSettings(str(tmp_path / "settings.ini"), QSettings.Format.IniFormat))
    monkeypatch.setattr(launch, "AppSettings", lambda: settings)
    monkeypatch.setattr(launch, "apply_theme", lambda *args, **kwargs: "light")
    asked = []
    monkeypatch.setattr(MainWindow, "offer_crash_restore", lambda self: asked.append(True) or False)
    seen = {}

    def run(argv, until):
        def exec_until():
            app = QApplication.instance()
            window = next(w for w in app.topLevelWidgets() if isinstance(w, MainWindow) and w.isVisible())
            deadline = time.monotonic() + 120
            while not until(window) and time.monotonic() < deadline:
                app.processEvents()
                time.sleep(0.01)
            learn = getattr(window, "learn_dock", None)          # read now: launch deletes the window after
            seen.update(window=window, state=window.windowState(), trace=window.session.trace,
                        frame=window.frameGeometry(), available=window.screen().availableGeometry(),
                        prompt=window.prompt.text, asked=bool(asked),
                        learn_shown=learn is not None and not learn.isHidden(),
                        learn_stop=learn.widget().index if learn is not None else None)
            window.close()
            window.deleteLater()
            return 0

        monkeypatch.setattr(QApplication, "exec", lambda self: exec_until())
        assert launch.launch(build_parser().parse_args(argv)) == 0
        return SimpleNamespace(**seen)

    return run


@pytest.fixture(scope="module")
def decoder_2048():
    """A tiny random Llama's Decoder with room for N_ATTENTION (2,048) tokens (tests/app/long_prompt.py)."""
    return long_decoder(N_ATTENTION)


@pytest.fixture(scope="module")
def head_trace(decoder_2048):
    """A 2,048-token prefill whose heads the exports draw."""
    return decoder_2048.prefill((np.arange(N_ATTENTION) * 3 + 2) % 96)


@pytest.fixture(scope="module")
def decoder_8000():
    """A tiny random Llama's Decoder after an 8,000-token prefill (N_PANELS)."""
    decoder = long_decoder(N_PANELS)
    decoder.prefill(np.arange(N_PANELS) % 96)
    return decoder


@pytest.fixture(scope="module")
def traces_8000(decoder_8000):
    """The 8,000-token prefill and two decoding steps after it."""
    first = decoder_8000.trace
    return first, decoder_8000.step(), decoder_8000.step()


@pytest.fixture
def long_panel(qtbot, monkeypatch):
    """An attention panel on a Session of its own, its display side SIDE (4 x 4 blocks at 2,048 tokens)."""
    monkeypatch.setattr(long_maps, "DISPLAY_SIDE", SIDE)
    return make(qtbot, Session(), AttentionPanel)


@pytest.fixture
def exported(monkeypatch):
    """What each written figure drew: its text rectangles, its map and title, by file name."""
    seen = {}
    save = export.save_figure

    def recording(figure, path, width, height):
        heatmap = figure.heatmaps[0]
        rect = heatmap.image.mapRectToParent(heatmap.image.boundingRect())
        title = next(item.text for item in figure.scene().items() if getattr(item, "text", None)
                     and "layer" in str(item.text))
        seen[Path(path).name] = dict(rects=label_rects(figure), image=heatmap.image.image.copy(),
                                     images=[h.image.image.copy() for h in figure.heatmaps],
                                     extent=(rect.height(), rect.width()), title=title,
                                     thread=threading.current_thread())
        return save(figure, path, width, height)

    monkeypatch.setattr(export, "save_figure", recording)
    return seen


@pytest.fixture
def computed_in(monkeypatch):
    """The threads that computed block maxima (long_maps.block_maxima)."""
    return spy(monkeypatch, long_maps, "block_maxima")


@pytest.fixture
def real_core_window(qtbot, tmp_path, monkeypatch):
    """A window on the real core, its store (nothing pulled) and settings in the test's folder."""
    monkeypatch.setenv("TRANSFORMER_EXPLORER_HOME", str(tmp_path / "store"))
    warnings = []
    monkeypatch.setattr(QMessageBox, "warning", lambda parent, title, text, *a: warnings.append(text))
    monkeypatch.setattr(QMessageBox, "question", lambda *a: QMessageBox.StandardButton.No)
    settings = AppSettings(QSettings(str(tmp_path / "settings.ini"), QSettings.Format.IniFormat))
    window = MainWindow(settings=settings, autosave_path=tmp_path / "autosave.json", catalog=lambda: [])
    window.resize(1366, 768)
    window.show()
    window.warnings = warnings
    yield window
    window.close()


@pytest.fixture
def palette_window(qapp, tmp_path, monkeypatch, request):
    """The layout probe's window (tests/app/layout_probe.py); the palette and the font put back after."""
    request.getfixturevalue("restore_palette")         # its finalizer runs after this fixture's
    monkeypatch.setattr(QMessageBox, "warning", lambda *a: None)
    font = QApplication.font()
    window = open_window(str(tmp_path / "settings.ini"))
    settle(0.5)
    yield window
    window.presentation.set_on(False)
    window.close()
    QApplication.setFont(font)


@pytest.fixture
def bare_session(qtbot):
    """A Session with no model."""
    return Session()


@pytest.fixture
def kv_lab(qtbot, bare_session):
    """KV lab on bare_session, shown at 1000 x 800."""
    panel = KVLabPanel(bare_session)
    qtbot.addWidget(panel)
    panel.resize(1000, 800)
    panel.show()
    return panel


@pytest.fixture
def lab_llama(bare_session):
    """A tiny random Llama, set with its 10-token trace on bare_session."""
    from explorer.core.decode import Decoder
    from explorer.core.runtime import from_tensors
    from tests.core.conftest import make_hf_model

    hf = make_hf_model("llama", seed=4)
    loaded = from_tensors(hf.config.to_dict(), hf.state_dict(), name="tiny-llama")
    trace = Decoder(loaded).prefill(np.arange(10) % 90)
    bare_session.set_model(loaded.info)
    bare_session.set_trace(trace)
    return loaded


@pytest.fixture
def words_session(qtbot):
    """A Session with no model that shows token i as tests/app/synthetic_trace.py's WORDS[i]."""
    session = Session()
    session.set_token_display(lambda token_id: WORDS[token_id])
    return session


@pytest.fixture
def t_session(qtbot):
    """A Session with no model that shows token i as "t{i}"."""
    session = Session()
    session.set_token_display(lambda token_id: f"t{token_id}")
    return session
