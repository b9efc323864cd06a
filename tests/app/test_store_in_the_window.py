"""The picker says which checkpoint and quantisation a catalog name stands for, and the pull question says
what will be fetched and how large it is."""
from PySide6.QtWidgets import QMessageBox

from explorer.app.window import pull_dialog
from explorer.app.window.model_picker import ModelToolbar
from explorer.app.window.model_refs import ModelChoice
from explorer.core import store


def test_the_picker_names_the_variant_of_a_catalog_model(qtbot):
    bar = ModelToolbar()
    qtbot.addWidget(bar)
    bar.set_models([ModelChoice("smollm2-135m  (pulled)", "smollm2-135m", source="pulled"),
                    ModelChoice("gemma3-270m  (pull…)", "gemma3-270m", source="pullable", reason="not pulled yet"),
                    ModelChoice("shakespeare-gqa  (bundled)", "shakespeare-gqa", source="bundled")], [], None)
    labels = [bar.models.itemText(i) for i in range(bar.models.count())]
    assert "smollm2-135m · Instruct, Q4_1  (pulled)" in labels
    assert any(label.startswith("gemma3-270m · ") and "Q4_K_M" in label for label in labels)
    assert "shakespeare-gqa  (bundled)" in labels


def test_the_pull_question_says_the_variant_and_the_size(qtbot, monkeypatch):
    asked = []
    monkeypatch.setattr(QMessageBox, "question", lambda parent, title, text, *a: (asked.append(text),
                                                                                  QMessageBox.StandardButton.No)[1])

    class Window:
        settings = None

    assert not pull_dialog.agreed_to_pull(Window(), "smollm2-135m")
    entry = store.PULLABLE["smollm2-135m"]
    mebibytes = sum(file.size for file in entry.files) / 2**20          # 98,362,432 bytes: the file pulled
    assert "Instruct, Q4_1" in asked[0] and f"{mebibytes:.1f}" in asked[0] and "MiB" in asked[0]


def test_the_first_load_of_a_pulled_gguf_says_it_writes_a_float32_copy(qtbot, tmp_path, catalog, monkeypatch):
    """Its copy is written beside it in the store; the next load of the same model says nothing of it."""
    from PySide6.QtCore import QSettings

    from explorer import cli
    from explorer.app.window.main_window import MainWindow
    from explorer.app.window.settings import AppSettings

    links, _ = catalog
    monkeypatch.setitem(store.PULLABLE, "tiny", store.Pullable(**{**store.PULLABLE["tiny"].__dict__,
                                                                  "first_load_bytes": 3_000_000}))
    assert cli.main(["pull", "tiny", "--find-links", str(links), "--quiet"]) == 0
    settings = AppSettings(QSettings(str(tmp_path / "s.ini"), QSettings.Format.IniFormat))
    window = MainWindow(settings=settings, autosave_path=tmp_path / "autosave.json", catalog=lambda: [])
    qtbot.addWidget(window)
    try:
        window.open_model("tiny")
        said = window.status.currentMessage()
        assert "for the first time" in said and "2.86 MiB" in said and "float32 copy" in said
        gguf = store.pulled_path("tiny")
        copy = gguf.with_name(gguf.name + ".f32.safetensors")
        qtbot.waitUntil(lambda: window.controller.reference == "tiny" and not window.worker.busy and copy.is_file(),
                        timeout=60000)
        window.open_model("tiny")
        assert "first time" not in window.status.currentMessage()
    finally:
        window.close()
