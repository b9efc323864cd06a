"""Models that are not decoder-only: which module builds them and which object steps them.

    model_type "bert"             -> encoder.py     (EncoderRunner: one encode pass, no Step)
    model_type "explorer-encdec"  -> encdec.py      (EncDecDecoder: source in, target token by token)
    anything else                 -> runtime.py     (decode.Decoder)

`make_decoder(loaded)` is what the app and the CLI call to get the right driver;
every driver has the Decoder's API (prefill, step, back, force, trace, kv_cache)
and `can_generate` says whether Step means anything.
"""
from __future__ import annotations

from explorer.core.decode import Decoder, RecordOptions
from explorer.core.sampling import Sampling

BUILDERS = {"bert": "explorer.core.encoder", "explorer-encdec": "explorer.core.encdec"}


def builds(hf_config: dict) -> bool:
    """Whether this module (not the decoder-only engine) builds a model of this config."""
    return hf_config.get("model_type") in BUILDERS


def refuse_decoder_build(hf_config: dict, source: str) -> None:
    """runtime.build_model builds decoder-only models; the families here come only through load_model."""
    from explorer.core.errors import UnsupportedModelError

    if builds(hf_config):
        raise UnsupportedModelError(
            f"{source}: model_type {hf_config['model_type']!r} is not a decoder-only model; open it with "
            "runtime.load_model, which builds it through explorer.core.families")


def load(checkpoint, device: str = "cpu", dtype: str = "float32"):
    """The LoadedModel of an encoder-only or encoder-decoder checkpoint."""
    from importlib import import_module

    return import_module(BUILDERS[checkpoint.hf_config["model_type"]]).load(checkpoint, device, dtype)


def load_built(checkpoint, build, model_info, device: str = "cpu", dtype: str = "float32"):
    """A LoadedModel of `checkpoint` built by a family's build(hf_config, tensors, source, device, dtype)
    and described by its model_info(model, config, name)."""
    from pathlib import Path

    from explorer.core.runtime import LoadedModel

    model, config = build(checkpoint.hf_config, checkpoint.tensors, str(checkpoint.path), device, dtype)
    return LoadedModel(model=model, config=config, tokenizer=checkpoint.tokenizer,
                       info=model_info(model, config, checkpoint.name), name=checkpoint.name,
                       path=Path(checkpoint.path) if checkpoint.path else None)


def make_decoder(loaded, record: RecordOptions = RecordOptions(), sampling: Sampling = Sampling(),
                 capacity: int | None = None):
    """The step driver that fits the model: Decoder, EncDecDecoder or EncoderRunner."""
    if loaded.info.is_encoder_only:
        from explorer.core.encoder import EncoderRunner

        return EncoderRunner(loaded, record, sampling)
    if loaded.info.is_encoder_decoder:
        from explorer.core.encdec_decode import EncDecDecoder

        return EncDecDecoder(loaded, record, sampling, capacity)
    return Decoder(loaded, record, sampling, capacity)


def can_generate(loaded_or_info) -> bool:
    """False for encoder-only models: the app disables Step (tooltip: encoder.NO_DECODING)."""
    info = getattr(loaded_or_info, "info", loaded_or_info)
    return not info.is_encoder_only
