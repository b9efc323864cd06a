"""View ▸ Theme, switched while plots are shown, never brings the app down (drive26: a SIGSEGV raising Q / K / V at
1920x1080 after Theme ▸ Dark and back to Light; the crash was in a plot layout's spacing, which reads the style).

Each switch set the application's style anew (QApplication.setStyle deletes the old one), and pyqtgraph's layouts
kept the deleted style: a later layout pass read freed memory. The switches run in a child process, with plots
laid out between them, so that a crash is an exit status here, not the end of the test run. Expectation: the child
exits 0 and its plots lay out after every switch.
"""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

CHILD = textwrap.dedent("""
    import faulthandler
    faulthandler.enable()
    import pyqtgraph as pg
    from PySide6.QtWidgets import QApplication, QWidget
    from explorer.app.window.theme import apply_theme

    app = QApplication([])
    root = QWidget()
    view = pg.GraphicsLayoutWidget(root)
    plots = [view.ci.addPlot(row=0, col=col) for col in range(3)]
    root.show()
    app.processEvents()
    for theme in ("dark", "light", "dark", "light", "system", "dark"):
        apply_theme(app, theme, root)
        junk = [bytearray(256) for _ in range(20000)]          # what was freed is written over
        app.processEvents()
        layout = view.ci.layout
        assert layout.horizontalSpacing() >= 0 and all(plot.width() > 0 for plot in plots)
    print("switched")
""")


def test_switching_the_theme_with_plots_shown_does_not_crash(tmp_path):
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen", HOME=str(tmp_path), XDG_CONFIG_HOME=str(tmp_path))
    root = Path(__file__).resolve().parents[2]
    for _ in range(3):                                           # the freed style's memory is not always reused
        done = subprocess.run([sys.executable, "-c", CHILD], cwd=root, env=env, capture_output=True, text=True,
                              timeout=120)
        assert done.returncode == 0 and "switched" in done.stdout, (done.returncode, done.stderr[-2000:])
