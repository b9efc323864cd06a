"""What the API's calls accept, checked once: one prompt or a batch, tokens, interventions, a decoder.

Every wrong type or range is an ExplorerError in one sentence naming the value (never a raw
ValueError or TypeError from numpy or torch).
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from explorer.core.errors import ExplorerError
from explorer.core.intervention import Intervention, combined
from explorer.core.sampling_settings import Sampling
from explorer.core.units import MAX_COUNT


def is_batch(prompts) -> bool:
    """Whether `prompts` is several prompts: a list or tuple of strings or of id sequences, or a 2-D array."""
    if isinstance(prompts, np.ndarray):
        return prompts.ndim == 2
    if not isinstance(prompts, (list, tuple)) or not prompts:
        return False
    return all(isinstance(p, (str, list, tuple, np.ndarray)) for p in prompts)


def one_prompt_ids(prompt, what: str = "prompt") -> np.ndarray:
    """The ids of a prompt given as ids: (T,) int64, or ExplorerError naming what is wrong."""
    if isinstance(prompt, (bytes, dict, set)) or prompt is None:
        raise ExplorerError(f"the {what} must be a string or a sequence of token ids, not {type(prompt).__name__}")
    if isinstance(prompt, str):
        raise ExplorerError(f"the {what} must be a sequence of token ids, not the string {_shown(prompt)}")
    if is_batch(prompt):
        raise ExplorerError(f"the {what} is a list of {len(prompt)} prompts where one was expected: "
                            "pass them one at a time, or to model.run(...) for a list of runs")
    refuse_mixed(prompt, what)
    try:
        array = np.asarray(prompt)
    except (TypeError, ValueError):
        raise ExplorerError(f"the {what} {str(prompt)[:60]!r} is not a sequence of token ids") from None
    kinds = "a sequence of token ids" if what == "ids" else "a string or a sequence of token ids"
    if array.ndim == 0:                     # a bare number is not taken for a one-token prompt
        raise ExplorerError(f"the {what} {_shown(prompt)} is a single number: give {kinds}, such as [{_shown(prompt)}]")
    if array.ndim != 1:                     # (B, T) is a batch, never here
        raise ExplorerError(f"the {what} is a {array.ndim}-dimensional array of shape {array.shape}: give {kinds}")
    if array.size == 0:
        raise ExplorerError(f"the {what} {_shown(prompt)} holds no token ids: give at least one")
    if array.size and array.dtype == object and all(isinstance(i, int) and not isinstance(i, bool)
                                                    for i in array.reshape(-1)):
        raise ExplorerError(f"the {what} holds the token id {max(array.reshape(-1), key=abs)}, far outside any "
                            "vocabulary")                      # past int64: numpy could only hold it as an object
    if array.size and not np.issubdtype(array.dtype, np.integer):
        raise ExplorerError(f"the {what} must hold integer token ids, not {array.dtype} values")
    if array.size and array.dtype.kind == "u" and int(array.max()) > np.iinfo(np.int64).max:
        raise ExplorerError(f"the {what} holds the token id {int(array.max())}, far outside any vocabulary")
    return array.astype(np.int64).reshape(-1)


def refuse_mixed(prompt, what: str = "prompt") -> None:
    """A list holding strings or sequences beside something else is a batch with one bad prompt: name it."""
    if not isinstance(prompt, (list, tuple)):
        return
    nested = [isinstance(p, (str, list, tuple, np.ndarray)) for p in prompt]
    if any(nested) and not all(nested):
        place = nested.index(False)
        raise ExplorerError(f"{what} {place} of the list, {_shown(prompt[place])}, is neither a string nor a "
                            "sequence of token ids: every prompt of a list must be one")


def callback(value, what: str) -> None:
    """`progress=` or `cancel=`: None or a callable, else ExplorerError."""
    if value is not None and not callable(value):
        raise ExplorerError(f"{what}={_shown(value)} must be a function (or None), not {type(value).__name__}")


def bos_choice(prepend_bos) -> None:
    """`prepend_bos=`: None (as the tokenizer does), True or False, else ExplorerError."""
    if prepend_bos is not None and not isinstance(prepend_bos, (bool, np.bool_)):
        raise ExplorerError(f"prepend_bos={_shown(prepend_bos)} must be True, False or None")


def whole(value, what: str, least: int = 0, most: int = MAX_COUNT) -> int:
    """`what`=`value` where it is a whole number (an int, not a bool nor a float: nothing is rounded) from `least`
    to `most`, else ExplorerError naming it."""
    if not _is_whole(value) or value < least:
        raise ExplorerError(f"{what}={_shown(value)} must be a whole number, {least} or more")
    if value > most:
        raise ExplorerError(f"{what}={_shown(value)} is more than {most:,}")
    return int(value)


def seed_of(seed) -> int:
    """A random seed: a whole number, 0 or more, else ExplorerError."""
    return whole(seed, "seed")


def activation_names(names) -> None:
    """`activations=`: None, True (the residual stream's names), one hook name or a list of them."""
    if names is None or names is True or isinstance(names, str):
        return
    if not isinstance(names, (list, tuple)) or not all(isinstance(name, str) for name in names):
        raise ExplorerError(f"activations={_shown(names)} must be True, a hook name such as "
                            "'blocks.0.hook_resid_post', or a list of them")


def index(value, what: str, size: int, allow_none: bool = False) -> int | None:
    """An integer in 0..size-1 (negative counts from the end), or ExplorerError."""
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise ExplorerError(f"{what} must be an integer, not {value!r}")
    value = int(value)
    if value < 0:
        value += size
    if not 0 <= value < size:
        raise ExplorerError(f"{what} {value} is out of range: there are {size} (0 to {size - 1})")
    return value


def single_token(tokenizer, text, what: str = "token") -> int:
    """The id of `text` when it is exactly one token (special tokens such as BOS left aside), else ExplorerError."""
    if isinstance(text, (int, np.integer)) and not isinstance(text, bool):
        return int(text)
    if not isinstance(text, str):
        raise ExplorerError(f"the {what} must be a string or a token id, not {type(text).__name__}")
    if tokenizer is None:
        raise ExplorerError(f"the model has no tokenizer: give the {what} as a token id")
    from explorer.core.patching import single_token as one  # torch: not before a model is used

    return one(tokenizer, text, what)


def intervention_of(ablate: Sequence, kernel: str | None, kernel_layers, kernel_temperature: float, intervention,
                    info):
    """The core Intervention of the API's keywords and `intervention` together, None for the model as it is:
    `ablate` zeroes O_h of each (layer, head); `kernel` replaces f_κ in `kernel_layers` (None: every layer)."""

    if intervention is not None and not isinstance(intervention, Intervention):
        raise ExplorerError(f"intervention must be an explorer.Intervention, not {type(intervention).__name__}")
    if kernel is None and kernel_layers is not None:
        raise ExplorerError("kernel_layers needs a kernel: give kernel='relu', 'linear' or 'exp'")
    built = Intervention()
    try:
        for layer, head in ablate:
            if not (_is_whole(layer) and _is_whole(head)):
                raise TypeError                   # int(0.5) would ablate layer 0 without a word
            built = built.ablate(int(layer), int(head))
    except (TypeError, ValueError):
        raise ExplorerError(f"ablate={_shown(ablate)} must list (layer, head) pairs of whole numbers, "
                            "e.g. [(3, 2)]") from None
    if kernel is not None:
        built = built.kernel(kernel, None if kernel_layers is None else _layers(kernel_layers), kernel_temperature)
    whole = combined([built] + ([intervention] if intervention is not None else []))
    if whole.is_empty:
        return None
    whole.check(info.n_layers, info.n_heads)
    return whole


def _is_whole(value) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool)


def _shown(value) -> str:
    """A value as one short line of an error message."""
    if isinstance(value, np.generic):
        value = value.item()
    text = " ".join(repr(list(value) if isinstance(value, tuple) else value).split())
    return text if len(text) <= 60 else text[:60] + "…"


def _layers(kernel_layers) -> list[int]:
    """kernel_layers as whole numbers (their range is the Intervention's check), or ExplorerError."""
    if isinstance(kernel_layers, (str, bytes)) or not isinstance(kernel_layers, (Sequence, np.ndarray)) \
            or not all(_is_whole(layer) for layer in kernel_layers):
        raise ExplorerError(f"kernel_layers={_shown(kernel_layers)} must list layers as whole numbers, e.g. [0, 3]")
    return [int(layer) for layer in kernel_layers]


RECORDINGS = ("trace", "logits")     # Model.run(record=): every layer's record, or none (the logits' states only)


def recording(record) -> str:
    """`record=` of Model.run, checked: "trace" or "logits"."""
    if not isinstance(record, str) or record not in RECORDINGS:
        raise ExplorerError(f"record={record!r} is not one of {', '.join(RECORDINGS)}")
    return record


def record_options(record: str = "trace", intervention=None):
    """The RecordOptions of a run recording `record` in float32; a run whose patterns are patched stores its
    maps (rebuilt from Q and K they would be the model's own)."""
    from explorer.core.recording import RecordOptions  # torch: not before a model is used

    stored = intervention is not None and bool(intervention.pattern_patches)
    return RecordOptions(dtype="float32", attention="stored" if stored else "on_demand", layers=record == "trace")


def sampling_of(sampling):
    """`sampling=`: an explorer.Sampling (its values were checked when it was made, Sampling.RULES), or None
    for greedy decoding, else ExplorerError."""

    if sampling is None:
        return Sampling()
    if not isinstance(sampling, Sampling):
        raise ExplorerError(f"sampling must be an explorer.Sampling(temperature=..., top_k=..., top_p=..., seed=...), "
                            f"not {type(sampling).__name__}")
    return sampling


def decoder(loaded, sampling, capacity: int, intervention=None, record: str = "trace"):
    """The recording driver of the model (drivers.make_decoder), recording as record_options says; an
    encoder or encoder-decoder records its whole trace whatever `record` says (its logits, or its states,
    are read from it)."""
    if loaded.info.is_encoder_only or loaded.info.is_encoder_decoder:
        record = "trace"
    from explorer.core.drivers import make_decoder  # torch: not before a model is used

    made = make_decoder(loaded, record_options(record, intervention), sampling_of(sampling), capacity=capacity)
    made.set_intervention(intervention)
    return made
