"""The step drivers by the name a family row gives them (families.ModelFamily.driver), and the one way to
make the driver of a loaded model: Decoder (decoder-only), EncoderRunner (BERT), EncDecDecoder.

The row holds a plain name so that the family table stays torch-free; this module is the torch side that
turns the name into the class. Every driver has the Decoder's API (prefill, step, back, force, trace,
kv_cache) and is built as Class(loaded, record=..., sampling=..., capacity=...).
"""
from __future__ import annotations

from explorer.core.decode import Decoder
from explorer.core.encdec_decode import EncDecDecoder
from explorer.core.encoder import EncoderRunner
from explorer.core.families import ModelFamily, family_of_model

DRIVERS = {"decoder": Decoder, "encoder": EncoderRunner, "encdec": EncDecDecoder}


def driver_class(row: ModelFamily) -> type:
    """The step driver class the row names."""
    return DRIVERS[row.driver]


def make_decoder(loaded, record=None, sampling=None, capacity: int | None = None):
    """The step driver of the model's row: Decoder, EncDecDecoder or EncoderRunner (its own defaults for
    the record options and sampling left out)."""
    row = family_of_model(loaded)
    given = {"record": record, "sampling": sampling}
    if row.cache != "none":          # a cache is what a capacity sizes; an encoder keeps none
        given["capacity"] = capacity
    return driver_class(row)(loaded, **{k: v for k, v in given.items() if v is not None})
