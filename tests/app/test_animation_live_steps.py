"""A live recording's frame shows exactly its own step even when the steps outpace the grabs: a step that
arrives while the last step's frame still waits (its panels still asking the model thread) has that frame
taken before any panel draws the new step, so no frame shows the next step."""
from __future__ import annotations

import dataclasses

import numpy as np
from PySide6.QtCore import Qt
from PySide6.QtGui import QFont
from PySide6.QtWidgets import QLabel, QMainWindow

from explorer.app.figures.animation import read_animation
from explorer.app.figures.live_recording import LiveRecording
from explorer.app.state.session import Session
from tests.app.synthetic_trace import build_trace


class StepWindow(QMainWindow):
    """A window whose one panel draws the trace's step count, as a panel draws a trace on `trace_changed`."""

    def __init__(self) -> None:
        super().__init__()
        self.session = Session(self)
        self.panel = QLabel("no trace")
        self.panel.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.panel.setFont(QFont("DejaVu Sans", 28))
        self.setCentralWidget(self.panel)
        self.statusBar()
        self.resize(320, 160)
        self.session.trace_changed.connect(self.draw)     # connected before the recording, as every panel is

    def draw(self, trace) -> None:
        self.panel.setText(f"step {trace.n_steps}" if trace is not None else "no trace")

    def picture_of(self, text: str) -> np.ndarray:
        """The window as it looks with `text` drawn, as RGB, the way a frame is taken (without the indicator)."""
        self.panel.setText(text)
        image = self.grab().toImage().convertToFormat(self.grab().toImage().Format.Format_RGB888)
        rows = np.frombuffer(image.constBits(), np.uint8, image.bytesPerLine() * image.height())
        return rows.reshape(image.height(), image.bytesPerLine())[:, : 3 * image.width()].reshape(
            image.height(), image.width(), 3).copy()


def test_steps_faster_than_the_grabs_give_each_frame_its_own_step(qtbot, tmp_path):
    window = StepWindow()
    qtbot.addWidget(window)
    window.show()
    qtbot.waitExposed(window)
    full = build_trace(n_layers=1, n_heads=1, prompt_len=4, steps=3)
    traces = [dataclasses.replace(full, steps=full.steps[:n]) for n in range(1, full.n_steps + 1)]
    window.session.set_trace(traces[0])
    recording = LiveRecording(window, tmp_path / "live.png")
    for trace in traces[1:]:               # each step comes before the last one's frame was taken
        window.session.set_trace(trace)
        assert recording.pending
    recording.stop()
    frames = read_animation(tmp_path / "live.png")          # lossless: every pixel as grabbed
    assert len(frames) == len(traces) - 1
    for frame, trace in zip(frames, traces[1:]):
        expected = {n: window.picture_of(f"step {n}") for n in (trace.n_steps, trace.n_steps + 1)}
        assert np.array_equal(frame, expected[trace.n_steps]), (
            f"the frame of step {trace.n_steps} does not show it"
            + (" (it shows the next step)" if np.array_equal(frame, expected[trace.n_steps + 1]) else ""))
