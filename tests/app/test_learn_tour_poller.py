"""The Learn tour waits for one thing at a time with one poller: a stop's state, or the person's session coming
back. A stop shown while the session comes back stops waiting for the session (its selection is not put on the
stop's trace); "Back to my session" while a stop is being reached stops waiting for the stop (no `reached`).

The window here is a stand-in whose model thread answers when the test says so, so that each wait can be caught
half way; the expectation is what a person would see: which selection the window ends on, which signal came."""
from __future__ import annotations

from types import SimpleNamespace

from PySide6.QtCore import QObject, QTimer, Signal

from explorer.app.state.session_model import Selection
from explorer.app.widgets import learn_tour
from explorer.app.widgets.learn_tour import OwnSession, Stop, StopState, Tour

MODEL = "shakespeare-mqa"
STOP_STATE = StopState(models=(MODEL,), layer=1, head=2)
STOP = Stop(id="a-stop", title="A stop", text="", formula="", state=STOP_STATE)
OWN = Selection(layer=3, head=0)


class Controller(QObject):
    load_failed = Signal(str)

    def __init__(self) -> None:
        super().__init__()
        self.loading, self.reference = None, MODEL

    def run(self) -> None:
        pass

    def step(self) -> None:
        pass


class Session:
    def __init__(self) -> None:
        self.trace, self.model, self.experiments, self.selections = None, "info", (), []

    def select(self, **fields) -> None:
        self.selections.append((fields["layer"], fields["head"]))

    def set_experiments(self, experiments) -> None:
        self.experiments = experiments


def stand_in_window():
    return SimpleNamespace(controller=Controller(), worker=SimpleNamespace(busy=True), session=Session(),
                           prompt=SimpleNamespace(set_text=lambda text: None),
                           restore_session=lambda state: None, docks={})


def answered(window) -> None:
    """The model thread done, a trace of the prompt shown."""
    window.worker.busy = False
    window.session.trace = SimpleNamespace(token_ids=(1, 2, 3))


def a_tour(qtbot, monkeypatch):
    monkeypatch.setattr(learn_tour, "available_model", lambda models: models[0])
    window = stand_in_window()
    tour = Tour(window)
    tour.own = OwnSession(MODEL, SimpleNamespace(prompt="mine", experiments=()), OWN)
    return window, tour


def test_a_stop_shown_while_the_session_comes_back_waits_for_the_stop_alone(qtbot, monkeypatch):
    window, tour = a_tour(qtbot, monkeypatch)
    tour.restore()
    assert tour.busy
    tour.show(STOP)
    answered(window)
    with qtbot.waitSignal(tour.reached, timeout=5000):
        pass
    qtbot.wait(5 * learn_tour.POLL_MS)
    assert window.session.selections == [(STOP_STATE.layer, STOP_STATE.head)]    # never the person's on it
    assert not tour.busy


def test_back_to_my_session_while_a_stop_is_reached_waits_for_the_session_alone(qtbot, monkeypatch):
    window, tour = a_tour(qtbot, monkeypatch)
    tour.show(STOP)
    own = tour.own
    with qtbot.assertNotEmitted(tour.reached, wait=5 * learn_tour.POLL_MS):
        tour.restore()
        answered(window)
        qtbot.waitUntil(lambda: not tour.busy, timeout=5000)
    assert window.session.selections == [(own.selection.layer, own.selection.head)]
    assert len(tour.findChildren(QTimer)) == 1
