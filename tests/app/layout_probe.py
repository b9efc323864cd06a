"""Open the main window on a screen of a given size and measure what a person would see.

Run as `python -m tests.app.layout_probe WIDTHxHEIGHT SETTINGS.ini OUT.json` under
`QT_QPA_PLATFORM=offscreen:configfile=...` (tests/app/test_layout_screens.py writes that
file, so Qt's screen really is WIDTH x HEIGHT). It builds the window on the fake core, shows
a 30-layer trace (SmolLM2-135M's shape), raises every tab in turn (the bottom docks' tabs
and the tabs inside panels), and records the window's geometry, every visible dock's and
bar's rectangle, the sizes the window asks for, and the pixel size of every visible plot's
ViewBox; then again after View ▸ Reset Layout and after an error of sixty lines. Then it
closes the window, which saves its layout, opens a second window on the same settings (a
restart) and measures again.
"""
from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pyqtgraph as pg
from PySide6.QtCore import QRect, QSettings, QTimer
from PySide6.QtWidgets import QApplication, QMessageBox, QTableWidget, QTabWidget, QToolBar

from explorer.app.thread.worker import ModelWorker
from explorer.app.window.main_window import MainWindow
from explorer.app.window.settings import AppSettings
from tests.app.fake_core import FakeCore
from tests.app.synthetic_trace import WORDS, build_trace

LONG_ERROR = "RuntimeError: a job failed.\n" + "\n".join(f"line {i} of the traceback " * 4 for i in range(60))


def settle(app: QApplication, seconds: float = 0.3) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        app.processEvents()
        time.sleep(0.01)


def drawn(app: QApplication, window, most: float = 10.0) -> None:
    """Events run until no part of a drawing in turns is due, `most` seconds at most: a zero-interval timer of the
    window's active (Panel.draw_in_parts and the KV lab's figure draw a part a turn on one). A fixed 0.15 s did
    not see the KV lab's plots on a loaded machine."""
    deadline = time.monotonic() + most
    while time.monotonic() < deadline:
        app.processEvents()
        if not any(timer.isActive() and timer.interval() == 0 for timer in window.findChildren(QTimer)):
            return
        time.sleep(0.005)


def rect(widget) -> list[int]:
    """The widget's rectangle in global (screen) coordinates."""
    top_left = widget.mapToGlobal(widget.rect().topLeft())
    return [top_left.x(), top_left.y(), widget.width(), widget.height()]


def in_sight(widget) -> bool:
    """Shown and not hidden behind another tab (a scroll area's own region is covered by its viewport)."""
    surface = widget.viewport() if hasattr(widget, "viewport") else widget
    return widget.isVisible() and not surface.visibleRegion().isEmpty()


def plot_boxes(window) -> list[dict]:
    """Every PlotItem's ViewBox a person can see, colour bars left out, in pixels."""
    boxes = []
    for name, dock in window.docks.items():
        if not in_sight(dock):
            continue
        for view in dock.widget().findChildren(pg.GraphicsView):
            if not in_sight(view):
                continue
            for item in view.items():
                if isinstance(item, pg.PlotItem) and not isinstance(item, pg.ColorBarItem) and item.isVisible():
                    on_view = view.mapFromScene(item.getViewBox().sceneBoundingRect()).boundingRect()
                    title = item.titleLabel.text if item.titleLabel.isVisible() else ""
                    boxes.append({"dock": name, "plot": title, "width": on_view.width(),
                                  "height": on_view.height()})
    return boxes


def tables(window) -> list[dict]:
    """Every visible table: how many rows of its own height its viewport holds."""
    found = []
    for name, dock in window.docks.items():
        if not in_sight(dock):
            continue
        for table in dock.widget().findChildren(QTableWidget):
            if in_sight(table) and table.rowCount():
                rows = table.viewport().height() / max(1, table.rowHeight(0))
                found.append({"dock": name, "name": table.objectName(), "rows_shown": rows,
                              "row_count": table.rowCount()})
    return found


def snapshot(app, window, label: str) -> dict:
    drawn(app, window)
    settle(app, 0.15)
    widgets = {name: rect(dock) for name, dock in window.docks.items() if in_sight(dock)}
    for bar in [window.statusBar(), window.menuBar(), *window.findChildren(QToolBar)]:
        if bar.isVisible():
            widgets[bar.objectName() or type(bar).__name__] = rect(bar)
    asked = {"minimumSizeHint": window.minimumSizeHint().toTuple(), "sizeHint": window.sizeHint().toTuple(),
             "minimumSize": window.minimumSize().toTuple()}
    return {"label": label, "window": rect(window), "frame": list(window.frameGeometry().getRect()), "asked": asked,
            "widgets": widgets, "plots": plot_boxes(window), "tables": tables(window),
            "prompt_height": window.docks["prompt"].height(),
            "line_height": window.prompt.fontMetrics().lineSpacing()}


def tour(app, window, name: str) -> list[dict]:
    """A snapshot with each bottom tab raised, and with each tab of a panel's own tab widget."""
    shots = [snapshot(app, window, f"{name}: default")]
    for dock_name, dock in window.docks.items():
        if window.dockWidgetArea(dock) != window.dockWidgetArea(window.docks["kv_cache"]):
            continue
        dock.raise_()
        shots.append(snapshot(app, window, f"{name}: {dock_name} raised"))
        for tabs in dock.widget().findChildren(QTabWidget):
            for index in range(tabs.count()):
                tabs.setCurrentIndex(index)
                shots.append(snapshot(app, window, f"{name}: {dock_name} tab {tabs.tabText(index)}"))
            tabs.setCurrentIndex(0)
    return shots


def open_window(settings_path: str) -> MainWindow:
    settings = AppSettings(QSettings(settings_path, QSettings.Format.IniFormat))
    folder = Path(settings_path).parent
    window = MainWindow(worker=ModelWorker(FakeCore().api()), settings=settings,
                        autosave_path=folder / "autosave.json", catalog=lambda: [])
    window.show()
    trace = build_trace(n_layers=30, n_heads=9, n_kv_heads=3, prompt_len=8, steps=3, d_head=64, d_model=576,
                        max_positions=8192)
    window.session.set_token_display(lambda token_id: WORDS[token_id % len(WORDS)])
    window.session.set_model(trace.model)
    window.session.set_trace(trace)
    return window


def no_dialogs() -> None:
    """Offscreen a modal dialog waits for ever: say what it would have said, and answer No."""
    def said(parent, title, text, *args, **kwargs):
        print(f"dialog: {text}", file=sys.stderr)
        return QMessageBox.StandardButton.No

    for name in ("warning", "question", "information", "critical"):
        setattr(QMessageBox, name, said)


def main(argv: list[str]) -> int:
    size, settings_path, out = argv
    no_dialogs()
    app = QApplication.instance() or QApplication(["layout-probe"])
    screen = app.primaryScreen().availableGeometry()
    window = open_window(settings_path)
    settle(app, 0.8)
    shots = tour(app, window, "first run")
    next(a for a in window.menus.view.actions() if a.text().replace("&", "") == "Reset Layout").trigger()
    settle(app, 0.8)
    shots.append(snapshot(app, window, "first run: Reset Layout"))
    window.session.report_error(LONG_ERROR)
    settle(app)
    shots.append(snapshot(app, window, "first run: a long error"))
    window.docks["kv_lab"].raise_()
    settle(app)
    window.close()
    settle(app)
    again = open_window(settings_path)
    settle(app, 0.8)
    shots += tour(app, again, "restart")
    again.close()
    available = QRect(screen)
    Path(out).write_text(json.dumps({"size": size, "available": list(available.getRect()), "shots": shots}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))


def document_lines(document) -> list[str]:
    """The lines of text a QTextDocument is laid out in, each stripped of its spaces, block after block."""
    document.size()                              # lays the document out at its text width
    lines = []
    for number in range(document.blockCount()):
        block = document.findBlockByNumber(number)
        layout = block.layout()
        for i in range(layout.lineCount()):
            line = layout.lineAt(i)
            lines.append(block.text()[line.textStart(): line.textStart() + line.textLength()].strip())
    return lines
