"""A Hugging Face folder's tokenizer read takes part in the load's progress as a GGUF's does (issue 22, 07ef775):
its tokenizer.json is the longest part of reading a folder (the weights are memory-mapped in milliseconds; a
33 MB Gemma 3 tokenizer.json is one library call of seconds), yet the Loading dialog showed no phase for it and a
Cancel pressed then was seen only after the weights."""
from __future__ import annotations

import pytest
import tokenizers

from explorer.app.thread.request_queue import Cancelled
from explorer.core import runtime
from explorer.core.loaders import READY_AT
from explorer.core.loaders import hf as hf_loader
from tests.core.test_tokenizer_progress import pressed_during, tokenizer_reports
from tests.core.tiny_checkpoints import write_hf_folder


@pytest.fixture
def folder(tmp_path):
    """A two-shard llama folder, so that the weights report more than one phase of their own."""
    path = tmp_path / "tiny-llama"
    write_hf_folder(path, shards=2)
    return path


def weight_reports(calls):
    return [(share, text) for share, text in calls if ".safetensors" in text]


def test_the_tokenizer_is_a_phase_of_its_own_before_the_weights(folder):
    calls = []
    runtime.load_model(folder, progress=lambda share, text: calls.append((share, text)))
    reading = tokenizer_reports(calls)
    assert reading, "the tokenizer read reported nothing"
    assert calls[:len(reading)] == reading, "the tokenizer is read first, before any other phase"
    weights = weight_reports(calls)
    assert len(weights) == 2 and calls.index(weights[0]) == len(reading), "the weights follow the tokenizer"
    shares = [share for share, _ in calls]
    assert shares == sorted(shares), "the bar went back"
    tokenizer_shares = [share for share, _ in reading]
    assert tokenizer_shares[0] == 0 and len(set(tokenizer_shares)) >= 2, "the bar stood still over the tokenizer"
    assert 0 < tokenizer_shares[-1] < weights[0][0] < READY_AT, "the tokenizer's share is not a part of the bar"
    assert calls[-1] == (READY_AT, "making the model ready")


def test_a_cancel_during_the_tokenizer_read_stops_the_load_before_the_weights(folder, monkeypatch):
    """Cancel pressed while the library builds the tokenizer (one opaque call): the app's progress raises
    Cancelled at the next report, which comes right after that call, and no weight file is opened."""
    mapped = []
    real_mapped = hf_loader.mapped_tensors
    monkeypatch.setattr(hf_loader, "mapped_tensors", lambda *args: mapped.append(args) or real_mapped(*args))
    pressed, calls = [], []
    pressed_during(monkeypatch, tokenizers.Tokenizer, "from_str", pressed)

    def app_progress(share, text):          # as decode_loop._load's: once Cancel is pressed, a report raises
        calls.append((share, text))
        if pressed:
            raise Cancelled()
    with pytest.raises(Cancelled):
        runtime.load_model(folder, progress=app_progress)
    assert pressed == ["from_str"]
    assert len(calls) >= 2 and all("tokenizer" in text for _, text in calls), \
        f"the Cancel was seen only at {calls[-1]}, not right after the library's read"
    assert not weight_reports(calls) and not mapped, "weights were read after the Cancel"
