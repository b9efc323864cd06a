"""The fixtures the app's tests share. pytest finds them here, so a test module names them as parameters and
imports none of them (an imported fixture is shadowed by the parameter of the same name).

A module that needs another fixture of the same name defines or imports its own, which takes precedence:
test_why_panels's `tiny` (the tiny Llama with its trace) is one. `store_home` is left out on purpose: it is
autouse, and the modules that want their own store import it."""
from tests.app.shared_window import window_recording_loads  # noqa: F401
from tests.app.test_window import dialogs, tiny, window  # noqa: F401
from tests.app.text_contrast import restore_palette  # noqa: F401
from tests.cli.test_pull_models import catalog, tiny_gguf  # noqa: F401
