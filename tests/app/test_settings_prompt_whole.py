"""The prompt a window quits with comes back whole at the next launch: the settings kept its first 100,000
characters, so a 144,000-character prompt that fits Gemma 3's context came back cut mid-word and was lost at the
next quit (drive28)."""
from __future__ import annotations

from PySide6.QtCore import QSettings

from explorer.app.window.settings import AppSettings
from tests.app.window_helpers import new_window


def test_a_long_prompt_quit_with_comes_back_whole(qtbot, tmp_path, dialogs):
    words = [f"word{i}" for i in range(24_000)]
    prompt = " ".join(words)                                   # 143,889 characters, no model needed
    assert len(prompt) > 140_000
    window = new_window(qtbot, tmp_path)
    window.prompt.set_text(prompt)
    window.close()
    again = AppSettings(QSettings(str(tmp_path / "settings.ini"), QSettings.Format.IniFormat))
    assert again.last_prompt == prompt
