"""Help ▸ About names a model the person opened through a symbolic link of their store by that link (and where
it leads): the recent list keeps paths resolved, so About listed the link's target, a path the person never
typed and may not recognise."""
from __future__ import annotations

from PySide6.QtCore import QSettings

from explorer.app.window.about import about_html
from explorer.app.window.main_window import MainWindow
from explorer.app.window.settings import AppSettings
from tests.app.shared_window import settle
from tests.app.tiny_model import make_tiny_llama


def about_rows(html: str) -> list[str]:
    """The first cell of each row of About's tables."""
    return [row.split("</td>")[0] for row in html.split("<tr><td>")[1:]]


def test_about_names_a_model_opened_through_a_link_of_the_store_by_the_link(qapp, qtbot, tmp_path, monkeypatch):
    store = tmp_path / "store"
    store.mkdir()
    monkeypatch.setenv("TRANSFORMER_EXPLORER_HOME", str(store))
    real = make_tiny_llama(tmp_path / "disk" / "models" / "tiny-llama").resolve()
    link = store / "my-llama"
    link.symlink_to(real, target_is_directory=True)
    settings = AppSettings(QSettings(str(tmp_path / "settings.ini"), QSettings.Format.IniFormat))
    window = MainWindow(settings=settings, autosave_path=tmp_path / "autosave.json")
    qtbot.addWidget(window)
    try:
        window.show()
        window.prompt.set_text("To be")
        window.open_model(str(link))                 # as File ▸ Open Model Folder… does with the link chosen
        settle(qapp, lambda: window.session.trace is not None and not window.worker.busy)
        window.catalog_loader.refresh()
        settle(qapp, lambda: any(c.source == "recent" for c in window.catalog_loader.latest))
        rows = about_rows(about_html(window))
        assert f"{link} → {real}" in rows, rows
        assert str(real) not in rows, "the link's target is listed as the model's name"
    finally:
        window.close()
