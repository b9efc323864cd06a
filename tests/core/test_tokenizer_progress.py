"""A model's first open builds its tokenizer from the GGUF's vocabulary (Gemma 3 270M: 262k pieces, ~6 s), and that
stretch reports progress and honours a Cancel like the rest of the load (issue 22): the Loading dialog sat at 0%
with no movement, and a Cancel pressed then was seen only once the tokenizer was built and saved."""
from __future__ import annotations

from pathlib import Path

import pytest
import tokenizers

from explorer.core import runtime, store
from explorer.core.loaders import READY_AT, gguf_tokenizer, open_checkpoint
from explorer.core.loaders import gguf as gguf_loader
from explorer.core.loaders import hf as hf_loader
from explorer.core.loaders.load_progress import Pause
from tests.core.test_gguf_cache import store as model_store  # noqa: F401 (fixture)
from tests.core.tiny_checkpoints import write_gemma3_gguf


class Stop(Exception):
    """What the app's progress raises once Cancel is pressed (request_queue.Cancelled)."""


def tokenizer_reports(calls):
    return [(share, text) for share, text in calls if "tokenizer" in text]


@pytest.fixture
def tiny_gemma(model_store, monkeypatch):  # noqa: F811
    """A Gemma 3 GGUF (SentencePiece vocabulary) inside the model store, never opened; the merge list reports
    every two pieces, as Gemma 3's real vocabulary does every 16k of its 262k."""
    monkeypatch.setattr(gguf_tokenizer, "PIECES_BETWEEN", 2, raising=False)
    path = model_store / "gemma" / "tiny-gemma3.gguf"
    path.parent.mkdir(parents=True)
    write_gemma3_gguf(path)
    return path


def test_a_first_load_reports_the_tokenizer_build_moving_and_short_of_ready(tiny_gemma):
    calls = []
    runtime.load_model(tiny_gemma, progress=lambda share, text: calls.append((share, text)))
    shares = [share for share, _ in calls]
    assert shares == sorted(shares), "the bar went back"
    assert calls[-1] == (READY_AT, "making the model ready")
    assert max(shares) <= READY_AT, "the bar was full before the model was made"
    building = tokenizer_reports(calls)
    assert max(share for share, _ in building) < READY_AT
    first_tensor = next(i for i, (_, text) in enumerate(calls) if "dequantizing" in text)
    assert calls[:len(building)] == building and len(building) <= first_tensor, "the tokenizer is built first"
    assert len({share for share, _ in building}) > 3, "the bar stood still while the tokenizer was built"
    assert any("saving the tokenizer" in text for _, text in building)


def pressed_during(monkeypatch, owner, name: str, pressed: list) -> None:
    """`owner.name` (a library call of the build) presses Cancel while it runs, as a person would then."""
    real = getattr(owner, name)

    def pressing(*args, **kwargs):
        pressed.append(name)
        return real(*args, **kwargs)
    monkeypatch.setattr(owner, name, staticmethod(pressing) if isinstance(owner, type) else pressing)


def cancellable(pressed: list, calls: list, press_at=None):
    """The app's progress: raises Stop at the first report after a press; `press_at(share, text)` presses."""
    def progress(share, text):
        calls.append((share, text))
        if pressed:
            raise Stop(text)
        if press_at is not None and press_at(share, text):
            pressed.append(text)
    return progress


@pytest.mark.parametrize("press", ["within the merge list", "while the library builds the model"])
def test_a_cancel_during_the_tokenizer_build_stops_the_load_at_once(tiny_gemma, monkeypatch, press):
    pressed, calls = [], []
    press_at = None
    if press == "within the merge list":
        press_at = lambda share, text: "tokenizer" in text and share > 0      # noqa: E731
    else:
        pressed_during(monkeypatch, tokenizers.models, "BPE", pressed)
    with pytest.raises(Stop) as stopped:
        runtime.load_model(tiny_gemma, progress=cancellable(pressed, calls, press_at))
    assert "tokenizer" in str(stopped.value), f"the Cancel was seen only at {stopped.value}"
    assert "saving" not in " ".join(text for _, text in calls), "the tokenizer was saved after the Cancel"
    assert not list(tiny_gemma.parent.glob("*.tokenizer.json")) and not list(tiny_gemma.parent.glob("*f32*"))


def test_a_cancel_while_the_saved_tokenizer_is_read_stops_the_load_right_after(tiny_gemma, monkeypatch):
    open_checkpoint(tiny_gemma)                                       # the first open saves the tokenizer
    pressed, calls = [], []
    pressed_during(monkeypatch, tokenizers.Tokenizer, "from_str", pressed)
    with pytest.raises(Stop) as stopped:
        open_checkpoint(tiny_gemma, progress=cancellable(pressed, calls))
    assert calls[0][1] == "reading the tokenizer saved by an earlier load" and pressed == ["from_str"]
    assert "tokenizer" in str(stopped.value) and len(calls) == 2


@pytest.mark.realmodel
def test_gemma3_270m_tokenizer_build_moves_the_bar(monkeypatch):
    """The real 262k-piece vocabulary: the bar moves many times while it is built, never reaching READY_AT. Built
    without a saved tokenizer or float32 copy (an earlier test in the run may have written both into the run's
    store), and stopped once the tensors start (their progress is tested elsewhere)."""
    path = store.pulled_path("gemma3-270m")
    if path is None:
        pytest.skip("gemma3-270m is not pulled (python -m explorer pull gemma3-270m --accept-license)")
    monkeypatch.setenv(store.COPY_DISABLE_ENV, "0")
    monkeypatch.setattr(gguf_loader, "tokenizer_cache_path", lambda path: None)
    calls = []

    def progress(share, text):
        calls.append((share, text))
        if "dequantizing" in text:
            raise Stop(text)
    with pytest.raises(Stop):
        runtime.load_model(path, progress=progress)
    building = tokenizer_reports(calls)
    shares = [share for share, _ in building]
    assert calls[:len(building)] == building and shares == sorted(shares) and max(shares) < READY_AT
    assert len(set(shares)) >= 10, f"the bar moved {len(set(shares))} times in the tokenizer's build"


def library_calls_recorded(monkeypatch, calls: list) -> None:
    """The tokenizers library's build calls (which hold Python's lock) go into `calls` as they start."""
    for owner, name in ((tokenizers.models, "BPE"), (tokenizers.Tokenizer, "from_str")):
        real = getattr(owner, name)

        def recording(*args, _real=real, _name=name, **kwargs):
            calls.append((None, f"library {_name}"))
            return _real(*args, **kwargs)
        monkeypatch.setattr(owner, name, staticmethod(recording) if isinstance(owner, type) else recording)


def said_before(calls: list, library_call: str) -> tuple[float, str]:
    """The report said last before `library_call` started."""
    index = calls.index((None, f"library {library_call}"))
    return calls[index - 1]


@pytest.mark.realmodel
def test_gemma3_270m_says_the_pause_before_each_build_and_smollm2_says_none(monkeypatch):
    """The library holds Python's lock while it builds Gemma 3's 513,511 merges (2.2 s, every thread waits, the
    window's too): the load says so, as a Pause the window shows first, just before the call; both when the
    tokenizer is built from the GGUF and when a saved one is read. SmolLM2's build is short: no Pause."""
    paths = {name: store.pulled_path(name) for name in ("gemma3-270m", "smollm2-135m")}
    if None in paths.values():
        pytest.skip(f"not pulled: {[name for name, path in paths.items() if path is None]}")
    monkeypatch.setattr(gguf_loader, "tokenizer_cache_path", lambda path: None)
    calls = []
    library_calls_recorded(monkeypatch, calls)
    built = gguf_loader.cached_or_built_tokenizer(paths["gemma3-270m"], lambda: gguf_loader._tokenizer_metadata(
        paths["gemma3-270m"]), "gemma", lambda share, text: calls.append((share, text)))
    share, text = said_before(calls, "BPE")
    assert isinstance(text, Pause) and "tokenizer" in text and "window waits" in text, text
    calls.clear()
    hf_loader.bounded_tokenizer(built.tokenizer.to_str().encode(), Path("saved.json"),
                                lambda share, text: calls.append((share, text)))
    assert isinstance(said_before(calls, "from_str")[1], Pause)
    calls.clear()
    gguf_loader.cached_or_built_tokenizer(paths["smollm2-135m"], lambda: gguf_loader._tokenizer_metadata(
        paths["smollm2-135m"]), "smollm2", lambda share, text: calls.append((share, text)))
    assert not [text for _, text in calls if isinstance(text, Pause)]
