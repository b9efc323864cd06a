"""The numbers of the encoder-decoder of "Attention Is All You Need" (encdec.py) and its config.json.

The format is our own: `model_type: "explorer-encdec"`. Torch-free and free of the engine's modules, so
that the family table (families.py) names its reader, `EncDecConfig.from_json`, by a plain import.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass

from explorer.core.activation_names import ACTIVATION_NAMES
from explorer.core.errors import UnsupportedModelError

MODEL_TYPE = "explorer-encdec"


@dataclass(frozen=True)
class EncDecConfig:
    """The numbers of one encoder-decoder; `to_json()` is its config.json."""

    vocab_size: int
    d_model: int
    n_heads: int
    d_ff: int
    n_encoder_layers: int
    n_decoder_layers: int
    max_positions: int
    norm_eps: float = 1e-5
    activation: str = "relu"
    pad_id: int = 0
    bos_id: int = 1                  # the decoder's start token
    eos_id: int = 2
    family: str = "encdec"

    # ----- what decode-side code reads from a ModelConfig --------------------------------
    @property
    def d_head(self) -> int:
        return self.d_model // self.n_heads

    d_qk = d_v = d_head

    @property
    def n_kv_heads(self) -> int:
        return self.n_heads

    @property
    def n_layers(self) -> int:
        return self.n_decoder_layers

    @property
    def attention_kind(self) -> str:
        return "mha"

    @property
    def layer_kinds(self) -> tuple[str, ...]:
        return ("causal",) * self.n_decoder_layers

    # ----- config.json ------------------------------------------------------------------------
    def to_json(self) -> dict:
        """Our fields, plus the transformers names generic readers look for (model listing); ours win."""
        d = asdict(self)
        d.pop("family")
        return {"model_type": MODEL_TYPE, "architectures": ["ExplorerEncoderDecoder"], **d,
                "tie_word_embeddings": True, "hidden_size": self.d_model, "num_attention_heads": self.n_heads,
                "num_hidden_layers": self.n_decoder_layers, "max_position_embeddings": self.max_positions}

    @staticmethod
    def from_json(d: dict) -> "EncDecConfig":
        if d.get("model_type") != MODEL_TYPE:
            raise UnsupportedModelError(f"model_type {d.get('model_type')!r} is not {MODEL_TYPE!r}")
        fields = {k: d[k] for k in EncDecConfig.__dataclass_fields__ if k in d and k != "family"}
        try:
            config = EncDecConfig(**fields)
        except TypeError as error:
            raise UnsupportedModelError(f"config of model_type {MODEL_TYPE!r} is incomplete ({error})") from None
        if config.d_model % config.n_heads or config.activation not in ACTIVATION_NAMES:
            raise UnsupportedModelError(
                f"config of model_type {MODEL_TYPE!r} is invalid: d_model {config.d_model} must divide into "
                f"{config.n_heads} heads and activation {config.activation!r} must be one of "
                f"{', '.join(sorted(ACTIVATION_NAMES))}")
        return config
