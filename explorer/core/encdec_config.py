"""The numbers of the encoder-decoder of "Attention Is All You Need" (encdec.py) and its config.json.

The format is our own: `model_type: "explorer-encdec"`. Torch-free and free of the engine's modules, so
that the family table (families.py) names its reader, `EncDecConfig.from_json`, by a plain import.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass

from explorer.core.activation_names import ACTIVATION_NAMES
from explorer.core.config_rules import CONTEXT, HEADS, LAYERS, VOCABULARY, WIDTH, Rule, check_table, count, positive
from explorer.core.errors import InvalidConfigError, UnsupportedModelError

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
        check_encdec(fields)                    # each value legal, the special ids within the vocabulary
        try:
            return EncDecConfig(**fields)
        except TypeError as error:
            raise UnsupportedModelError(f"config of model_type {MODEL_TYPE!r} is incomplete ({error})") from None


# Its config.json's rules, by its own keys (config_rules); its special ids must be ids of its vocabulary (a bos_id
# past it ended in an IndexError at the first step; boundary27).
ENCDEC_FIELDS = {
    "vocab_size": count(high=VOCABULARY), "d_model": count(high=WIDTH), "n_heads": count(high=HEADS),
    "d_ff": count(), "n_encoder_layers": count(high=LAYERS), "n_decoder_layers": count(high=LAYERS),
    "max_positions": count(high=CONTEXT), "norm_eps": positive(),
    "activation": Rule("choice", choices=ACTIVATION_NAMES),
    **{key: Rule("int", low=0, high=VOCABULARY) for key in ("pad_id", "bos_id", "eos_id")},
}


def check_encdec(config: dict) -> None:
    """InvalidConfigError naming the first field of an encoder-decoder's config.json that is not legal."""
    check_table(config, ENCDEC_FIELDS, {})
    vocabulary = config.get("vocab_size")
    for key in ("pad_id", "bos_id", "eos_id"):
        if key in config and vocabulary is not None and config[key] >= vocabulary:
            raise InvalidConfigError(f"{key} = {config[key]} is not a token id: the vocabulary holds ids 0 to "
                                     f"{vocabulary - 1}.")
    if "d_model" in config and "n_heads" in config and config["d_model"] % config["n_heads"]:
        raise InvalidConfigError(f"n_heads: the {config['n_heads']} heads must divide d_model {config['d_model']}.")
