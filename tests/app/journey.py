"""A person's journey through the real main window, and the checks that follow every action.

`Journey` drives a MainWindow on the real core the way a person does: it types and presses Run,
Step, Back, clicks a candidate to branch, raises every panel the registry lists, presses each job's
own button (what-if for every offered target, the patching map, the logit lens), clicks a cell of
the attention map to have it derived, and exports from the window's own menu. After every action
(`act`) it waits for the model thread and every panel's jobs, then checks what a person would see:

- every panel in sight names the session's current model and trace, or says plainly why not (the
  panel contract of explorer/app/panels/base.py: `drawn()`);
- no error text outside the one error component (an ErrorLine), and no error there or in a dialog
  unless the action called for one;
- the window asks for no more than the emulated screen, and every visible plot is at least
  MIN_PLOT_PX each way (tests/app/screen_fit.py).
"""
from __future__ import annotations

import re
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pyqtgraph as pg
from PySide6.QtCore import QPoint, QSize, Qt
from PySide6.QtGui import QImage
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QAbstractButton, QApplication, QLabel, QMessageBox, QTabWidget, QTextEdit, QWidget

from explorer.app.figures import export_dialogs
from explorer.app.panels import registry
from explorer.app.panels.base import Panel, WrappedText
from explorer.app.widgets.model_call import ModelCall
from explorer.app.window.error_bar import ErrorLine
from tests.app.layout_probe import in_sight
from tests.app.screen_fit import emulated_screen, fit_problems
from tests.app.tiny_model import make_tokenizer, save_random_model
from tests.app.window_helpers import new_window

BUNDLED = Path(__file__).resolve().parents[2] / "resources" / "models"
# What error text looks like when it escapes the error component: an exception's name or a traceback.
ERROR_TEXT = re.compile(r"Traceback \(most recent call last\)|\b[A-Z]\w*(Error|Exception)\b|\binference tensor\b")
WAIT_S = 120.0


def registered_panels() -> list[str]:
    """Every panel the registry lists, by object name (the main window builds one dock for each)."""
    return [spec.object_name for spec in registry.PANELS]


def make_tiny_gemma(folder: Path) -> Path:
    """A random Gemma 3 whose first layer attends through a sliding window of 4 tokens, the second to all."""
    import transformers

    folder.mkdir(parents=True, exist_ok=True)
    tokenizer = make_tokenizer(folder)
    config = transformers.Gemma3TextConfig(
        vocab_size=tokenizer.get_vocab_size(), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, head_dim=8, query_pre_attn_scalar=8, sliding_window=4,
        layer_types=["sliding_attention", "full_attention"], max_position_embeddings=64,
        tie_word_embeddings=True, bos_token_id=0, eos_token_id=0, pad_token_id=0)
    return save_random_model(transformers.Gemma3ForCausalLM, config, folder)


@contextmanager
def journey_in_a_window(qtbot, tmp_path: Path, monkeypatch, screen: QSize, out: Path | None = None):
    """A Journey on a new main window (the real core) at the emulated `screen` (tests/app/screen_fit.py), its
    warning dialogs recorded in journey.warnings rather than shown, exports written to `out` (default
    tmp_path); the window is closed when the block ends, whether its checks pass or not."""
    with emulated_screen(screen):
        window = new_window(qtbot, tmp_path)
        journey = Journey(qtbot, window, screen, out or tmp_path)
        monkeypatch.setattr(QMessageBox, "warning", lambda parent, title, text, *a: journey.warnings.append(text))
        try:
            yield journey
        finally:
            window.close()


def walk_on_screen(qtbot, tmp_path: Path, screen: QSize, dialogs: dict):
    """A Journey on a new main window resized to the emulated `screen` (the `screen` fixture), its warnings those
    the `dialogs` fixture records; a generator for a fixture to yield from. Presentation is turned off at the
    end, since the application's font is every later test's too."""
    window = new_window(qtbot, tmp_path)
    window.resize(screen)
    walk = Journey(qtbot, window, screen, tmp_path)
    walk.warnings = dialogs["warnings"]
    yield walk
    if window.presentation.on:
        window.presentation.set_on(False)
    window.close()


@dataclass
class Journey:
    """The window, its emulated screen, the dialogs it showed, and what the journey has done."""

    qtbot: object
    window: object
    screen: QSize
    out: Path
    warnings: list = field(default_factory=list)
    log: list = field(default_factory=list)            # (action, seconds) in order
    exports: list = field(default_factory=list)

    # ----- waiting ---------------------------------------------------------------------------
    def busy(self) -> bool:
        w = self.window
        if w.worker.busy or w.controller.loading is not None:
            return True
        if any(call.running for call in w.findChildren(ModelCall)):
            return True
        return any(panel.drawing for panel in w.findChildren(Panel))    # a drawing's later parts, a turn each

    def idle(self, what: str) -> None:
        app, deadline = QApplication.instance(), time.monotonic() + WAIT_S
        quiet = 0
        while quiet < 3:                     # three quiet turns: a finished job may ask the next one
            app.processEvents()
            quiet = 0 if self.busy() else quiet + 1
            assert time.monotonic() < deadline, f"{what}: the window stayed busy for {WAIT_S:.0f} s"
            time.sleep(0.01)

    # ----- one action and the checks after it ------------------------------------------------
    def act(self, what: str, action, errors: tuple[str, ...] = ()) -> None:
        """Do `action`, wait for every job it started, check everything; `errors`: words an error the
        action calls for may contain (it must then appear in the error component, and only there)."""
        start, seen = time.monotonic(), len(self.warnings)
        action()
        self.idle(what)
        self.log.append((what, time.monotonic() - start))
        where = f"{self.model_name()} at {self.screen.width()}x{self.screen.height()}, after {what}"
        self.check(where, self.warnings[seen:], errors)

    def model_name(self) -> str:
        summary = self.window.controller.summary
        return summary.name if summary is not None else "no model"

    def check(self, where: str, warned: list, errors: tuple[str, ...]) -> None:
        unexpected = [text for text in warned if not any(word in text for word in errors)]
        assert not unexpected, f"{where}: a dialog said {unexpected}"
        self.check_error_lines(where, errors)
        self.check_no_error_text(where)
        self.check_panels(where)
        problems = fit_problems(self.window, self.screen)
        assert not problems, f"{where}: " + "; ".join(problems)
        self.check_axis_units(where)

    def check_axis_units(self, where: str) -> None:
        """No axis a person sees is rescaled behind its unit: "MiB (x0.001)" beside a plot in MiB."""
        for name, dock in self.window.docks.items():
            if not in_sight(dock):
                continue
            for view in dock.widget().findChildren(pg.GraphicsView):
                for item in view.items() if in_sight(view) else []:
                    if isinstance(item, pg.AxisItem) and item.isVisible() and "(x" in item.labelString():
                        raise AssertionError(f"{where}: {name} has an axis labelled {item.labelString()!r}")

    def check_error_lines(self, where: str, errors: tuple[str, ...]) -> None:
        for line in self.window.findChildren(ErrorLine):
            if line.message:
                assert any(word in line.message for word in errors), \
                    f"{where}: {_owner(line)} shows the error {line.message[:300]!r}"
                assert line.height() <= 3 * line.fontMetrics().height(), \
                    f"{where}: an error line took {line.height()} px"
                line.clear()                  # dismissed, as a person does with its ×

    def check_no_error_text(self, where: str) -> None:
        for widget in self.window.findChildren(QWidget):
            if not widget.isVisible() or _inside_error_line(widget):
                continue
            text = _text_of(widget)
            if text and ERROR_TEXT.search(text):
                raise AssertionError(f"{where}: {_owner(widget)} shows error text outside the error component: "
                                     f"{text[:300]!r}")

    def check_panels(self, where: str) -> None:
        session = self.window.session
        for name in registered_panels():
            dock = self.window.docks[name]
            panel = dock.widget() if getattr(dock, "built", True) else None
            if not isinstance(panel, Panel) or not panel.is_shown():
                continue
            drawn = panel.drawn()
            if drawn.kind == "trace":
                assert (drawn.model_id, drawn.trace_id) == (session.model_id, session.trace_id), \
                    f"{where}: {name} draws model {drawn.model_id} trace {drawn.trace_id}, the session has " \
                    f"{session.model_id} and {session.trace_id}"
                assert not panel.note.isVisibleTo(panel), f"{where}: {name} shows a note over the current trace"
                continue
            assert drawn.kind in ("empty", "working", "out of date") and drawn.why, f"{where}: {name} is {drawn}"
            assert panel.note.isVisibleTo(panel) and drawn.why in panel.note.text(), \
                f"{where}: {name} is {drawn.kind} without saying so"
            if drawn.kind != "out of date":
                assert not panel.body_widget.isVisibleTo(panel), f"{where}: {name} says {drawn.kind} but shows views"

    # ----- what a person does ------------------------------------------------------------------
    def open(self, folder: Path, prompt: str) -> None:
        def opening():
            self.window.prompt.set_text(prompt)
            self.window.open_model(str(folder))
        self.act(f"opening {folder.name}", opening)
        trace = self.window.session.trace
        assert trace is not None and trace.model.name == self.window.controller.summary.name, folder

    def type_and_run(self, words: str) -> None:
        """Type at the end of the prompt and press Run at once, before the editor's pause has passed."""
        editor = self.window.prompt
        expected = editor.text + words

        def typing():
            editor.setFocus()
            editor.moveCursor(editor.textCursor().MoveOperation.End)
            QTest.keyClicks(editor, words)
            self.window.actions.run.trigger()
        self.act("typing and Run", typing)
        tokens = self.window.controller.summary.tokenizer.encode(expected)
        trace = self.window.session.trace
        ran = trace.encoder if trace.encoder is not None and trace.model.is_encoder_decoder else trace.steps[0]
        typed = [int(i) for i in tokens.ids]
        assert ran.token_ids.tolist()[-len(typed):] == typed, \
            f"Run ran {ran.token_ids.tolist()}, not the typed {expected!r}: {typed}"   # an encoder may add a start id
        assert not self.window.session.out_of_date, self.window.session.out_of_date

    def decoder(self) -> bool:
        model = self.window.session.model
        return not model.is_encoder_only

    def step_back_branch(self) -> None:
        w = self.window
        if not self.decoder():
            assert not w.actions.step.isEnabled(), "Step is offered for an encoder"
            return
        before = w.session.trace.n_steps
        self.act("Step", w.actions.step.trigger)
        self.act("Step", w.actions.step.trigger)
        assert w.session.trace.n_steps == before + 2
        self.act("Back", w.actions.back.trigger)
        assert w.session.trace.n_steps == before + 1
        self.act("branching on another candidate", self.branch)

    def branch(self) -> None:
        """Click the second candidate of the next-token table: the model goes on from it."""
        w = self.window
        self.raise_panel("next_token")
        w.session.select(token=w.session.trace.n_tokens - 1, step=None)
        self.idle("selecting the last token")
        table = w.docks["next_token"].widget().table
        assert table.rowCount() >= 2, "no candidates to branch on"
        chosen = table.item(1, 0).text()
        cell = table.visualItemRect(table.item(1, 0)).center()
        QTest.mouseClick(table.viewport(), Qt.MouseButton.LeftButton, pos=cell)
        self.chosen = chosen

    def raise_panel(self, name: str) -> Panel:
        dock = self.window.docks[name]
        dock.show()
        dock.raise_()
        panel = dock.widget()
        self.qtbot.waitUntil(panel.is_shown, timeout=5000)
        return panel

    def raise_every_panel(self) -> None:
        for name in registered_panels():
            self.act(f"raising {name}", lambda name=name: self.raise_panel(name))
            for tabs in self.window.docks[name].widget().findChildren(QTabWidget):
                for index in range(tabs.count()):
                    self.act(f"{name} tab {tabs.tabText(index)}",
                             lambda tabs=tabs, index=index: tabs.setCurrentIndex(index))
                tabs.setCurrentIndex(0)

    # ----- the jobs --------------------------------------------------------------------------------
    def what_if_every_target(self, most: int | None = None) -> list[str]:
        """A what-if conversion to every target offered (the first `most` of them only, where given: a real model's
        conversions take a minute each on two cores); the targets converted to."""
        panel = self.raise_panel("kv_lab")
        if not self.decoder():
            assert not panel.run_button.isEnabled(), "a what-if conversion is offered for an encoder"
            return []
        panel.tabs.setCurrentIndex(1)
        self.idle("the what-if tab")
        offered = [panel.variant_box.itemText(i) for i in range(panel.variant_box.count())]
        if not offered:            # a model trained with MLA: nothing to convert it to, and the panel says so
            assert not panel.run_button.isEnabled(), "Convert and compare is offered with no target to convert to"
            assert self.window.session.model.name in panel.targets_note.text(), \
                f"no what-if target offered, and no word why: {panel.targets_note.text()!r}"
            return []
        listed = [row.variant.name for row in panel.rows() if row.variant.kind == "mla"]
        if listed and not set(listed) & set(offered):    # the table's MLA rows, none offered: the panel says why
            assert "No MLA target" in panel.targets_note.text(), \
                f"MLA rows listed, none offered, and no word why: {panel.targets_note.text()!r}"
        panel.steps_box.setValue(2)              # the second step's token lies beyond the prompt's text
        offered = offered[:most]
        for index, variant in enumerate(offered):
            def convert(index=index):
                panel.variant_box.setCurrentIndex(index)
                assert panel.run_button.isEnabled(), f"Convert is greyed for {variant}"
                panel.run_button.click()
            self.act(f"what-if {variant}", convert)
            assert panel.result is not None and panel.result.variant == variant, f"what-if {variant} shows no result"
            shown = [panel.steps_table.item(row, 1).text() for row in range(panel.steps_table.rowCount())]
            assert not any(re.fullmatch(r"id \d+", text) for text in shown), f"what-if {variant} shows ids: {shown}"
        panel.tabs.setCurrentIndex(0)
        return offered

    def cancels(self) -> None:
        """Cancel what was just started: a what-if conversion, a run of an edited prompt (Stop). Neither
        says anything in an error's words, and every panel keeps its contract: the trace before the cancelled
        run stays, out of date (each moment Stop can land at: tests/app/test_journey_stop.py)."""
        w = self.window
        lab = self.raise_panel("kv_lab")
        if lab.run_button.isEnabled():
            lab.tabs.setCurrentIndex(1)
            self.act("what-if cancelled", lambda: (lab.run_button.click(), lab.cancel_button.click()))
            assert not lab.runner.running, "the cancelled conversion still runs"
            lab.tabs.setCurrentIndex(0)

        def run_and_stop():
            w.prompt.set_text(w.prompt.text + " again")
            w.actions.run.trigger()
            w.actions.stop.trigger()
        self.act("Run, then Stop at once", run_and_stop)
        assert w.session.trace is not None and w.session.out_of_date, "Stop did not keep the trace before"
        self.act("Run again", w.actions.run.trigger)
        assert not w.session.out_of_date, w.session.out_of_date

    def patching(self) -> None:
        panel = self.raise_panel("experiments")
        panel.tabs.setCurrentWidget(panel.patching)
        view = panel.patching
        if not self.decoder() or self.window.session.model.is_encoder_decoder:
            return
        prompt = self.window.prompt.text
        view.clean.setText(prompt)
        view.corrupt.setText(prompt[::-1])
        top = self.window.session.trace.steps[0].top_ids[-1]
        tokenizer = self.window.controller.summary.tokenizer
        view.target.setText(tokenizer.decode([int(top[0])]))
        view.against.setText(tokenizer.decode([int(top[1])]))
        self.act("patching map", view.run_button.click, errors=("token",))
        panel.tabs.setCurrentIndex(0)

    def derive_a_cell(self) -> None:
        """Click a cell of the large attention map: Show the work comes to the front and derives it (where it can:
        else the map clicked stays in front)."""
        attention = self.raise_panel("attention")
        self.idle("drawing attention")
        trace = self.window.session.trace
        row = min(2, trace.n_tokens - 1)
        heatmap = attention.large
        view = heatmap.plot.scene().views()[0]
        point = view.mapFromScene(heatmap.scene_pos_of(row, 0))
        self.act("clicking a cell of the attention map",
                 lambda: QTest.mouseClick(view.viewport(), Qt.MouseButton.LeftButton, pos=QPoint(point.x(), point.y())))
        derivation = self.window.docks["derivation"].widget()
        if derivation.unavailable(trace):           # an encoder or encoder-decoder: the map clicked stays in front
            assert attention.is_shown() and not derivation.is_shown(), "Show the work, deriving nothing, was raised"
            return
        assert derivation.is_shown(), "clicking a cell did not bring Show the work to the front"
        assert f"A[{row}, 0]" in derivation.formula, \
            f"{self.model_name()}: Show the work derives {derivation.formula[:80]!r}, not the clicked A[{row}, 0]"

    def why_panels(self) -> None:
        for name in ("atlas", "attribution", "residual"):
            self.act(f"{name} raised", lambda name=name: self.raise_panel(name))
        attribution = self.window.docks["attribution"].widget()
        if attribution.token_box.isEnabled() and attribution.token_box.count() > 1:
            self.act("attribution of another token", lambda: attribution.token_box.setCurrentIndex(1))
        if self.window.session.model.is_encoder_only or self.window.session.model.is_encoder_decoder:
            return
        docks = self.window.docks
        for name, result in (("atlas", "values"), ("attribution", "result"), ("residual", "stream")):
            assert getattr(docks[name].widget(), result) is not None, f"{name} shows no result of its job"

    def logit_lens(self) -> None:
        panel = self.raise_panel("next_token")
        if not self.decoder() or not panel.lens_button.isEnabled():
            return
        self.act("logit lens", panel.lens_button.click)
        assert panel.lens_table.isVisibleTo(panel) and panel.lens_table.rowCount(), "the logit lens shows nothing"
        self.act("logit lens closed", panel.lens_button.click)

    def export_from_menu(self, patch, name: str = "attention") -> Path:
        """Ctrl+E on a panel: File ▸ Export's first action for it, to a PNG in the journey's folder."""
        path = self.out / f"{len(self.exports):02d}-{self.model_name()}-{name}.png"
        patch.setattr(export_dialogs, "ask_path", lambda *args, **kwargs: path)
        patch.setattr(export_dialogs, "ask_size", lambda parent, default=None: (640, 480))
        panel = self.raise_panel(name)
        panel.setFocus()
        self.act(f"export {name}", self.window.menus.export_focused_panel)
        image = QImage(str(path))
        assert not image.isNull() and (image.width(), image.height()) == (640, 480), f"{path} is no 640x480 image"
        self.exports.append(path)
        return path


def _inside_error_line(widget: QWidget) -> bool:
    while widget is not None:
        if isinstance(widget, ErrorLine):
            return True
        widget = widget.parentWidget()
    return False


def _text_of(widget: QWidget) -> str:
    if isinstance(widget, (QLabel, QAbstractButton, WrappedText)):
        return widget.text()
    if isinstance(widget, QTextEdit):
        return widget.toPlainText()
    return ""


def _owner(widget: QWidget) -> str:
    """The dock (or window part) a widget belongs to, for a failure message."""
    names = []
    while widget is not None:
        if widget.objectName():
            names.append(widget.objectName())
        widget = widget.parentWidget()
    return "/".join(reversed(names[:3])) or type(widget).__name__
