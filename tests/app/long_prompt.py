"""The long prompts the app's long-trace tests share (their fixtures are in tests/app/conftest.py): the
attention panel's 2,048 tokens shown on a 512-pixel side, the other panels' 8,000 tokens, a decoder with room
for a long prompt, and a spy on the threads that call a function."""
from __future__ import annotations

import threading

N_ATTENTION = 2048        # 2048² entries: rebuilt on demand (ON_DEMAND_FROM is 1024²)
SIDE = 512                # the display side for the attention tests: 4 × 4 blocks at N_ATTENTION tokens
N_PANELS = 8000


def long_decoder(n: int, family: str = "llama"):
    """A Decoder of a tiny random model of the family (tests/core/conftest.py) with room for n tokens, nothing
    run yet."""
    # torch: imported only for the modules that ask for it
    from explorer.core.decode import Decoder, RecordOptions
    from explorer.core.runtime import from_tensors
    from tests.core.conftest import make_hf_model

    hf_model = make_hf_model(family)
    loaded = from_tensors(dict(hf_model.config.to_dict(), max_position_embeddings=n + 16), hf_model.state_dict())
    return Decoder(loaded, RecordOptions(), capacity=n + 8)


def spy(monkeypatch, owner, name: str) -> list[str]:
    """The names of the threads that call owner.name from now on."""
    names = []
    original = getattr(owner, name)

    def recording(*args, **kwargs):
        names.append(threading.current_thread().name)
        return original(*args, **kwargs)

    monkeypatch.setattr(owner, name, recording)
    return names
