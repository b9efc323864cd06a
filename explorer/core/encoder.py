"""BERT-style encoder-only models (Devlin et al. 2019): one bidirectional pass, nothing to decode.

    h_0 = LN(W_word[ids] + W_pos[positions] + W_type[token types])
    for each layer:  h = LN(h + SelfAttn(h));  h = LN(h + FFN(h))     (post-LN, GELU, full mask)

The layer is the encoder layer of encdec.py (the Transformer's encoder side);
only the embeddings differ. `EncoderRunner` has the Decoder's API so that the
app can drive it: prefill(ids) records one "encode" step with full masks;
step() refuses, because an encoder predicts no next token; its KV cache is none.
"""
from __future__ import annotations

import re
import time
from dataclasses import replace

import numpy as np
import torch
from torch import nn

from explorer.core.building import SkipParameterInit, load_built, resolve_device, torch_dtype
from explorer.core.capture import PaddedCapture, StepCapture
from explorer.core.config import ModelConfig, bert_config  # noqa: F401 (bert_config: read in config.py)
from explorer.core.config_schema import check_runnable
from explorer.core.decode import refuse_non_finite
from explorer.core.encdec import EncoderLayer, padded
from explorer.core.errors import ContextOverflowError, ExplorerError, ModelLoadError
from explorer.core.intervention_run import as_run
from explorer.core.model import LayerNorm
from explorer.core.recording import Recorder, RecordOptions
from explorer.core.trace import ModelInfo, StepRecord, Trace
from explorer.core.weights import validate

NO_DECODING = "an encoder-only model reads the whole text at once and predicts no next token, so there is no Step"

# Hugging Face BertModel names -> ours ({i} = layer, {p} = weight | bias).
BERT_WEIGHTS = {
    "embeddings.word_embeddings.weight": "embed.weight",
    "embeddings.position_embeddings.weight": "pos.weight",
    "embeddings.token_type_embeddings.weight": "token_type.weight",
    "embeddings.LayerNorm.{p}": "embed_norm.{p}",
    "encoder.layer.{i}.attention.self.query.{p}": "layers.{i}.attn.wq.{p}",
    "encoder.layer.{i}.attention.self.key.{p}": "layers.{i}.attn.wk.{p}",
    "encoder.layer.{i}.attention.self.value.{p}": "layers.{i}.attn.wv.{p}",
    "encoder.layer.{i}.attention.output.dense.{p}": "layers.{i}.attn.wo.{p}",
    "encoder.layer.{i}.attention.output.LayerNorm.{p}": "layers.{i}.attn_norm.{p}",
    "encoder.layer.{i}.intermediate.dense.{p}": "layers.{i}.ffn.w_in.{p}",
    "encoder.layer.{i}.output.dense.{p}": "layers.{i}.ffn.w_out.{p}",
    "encoder.layer.{i}.output.LayerNorm.{p}": "layers.{i}.ffn_norm.{p}",
}
# Not part of the encoder: the position-id buffer, the pooler and task heads.
BERT_IGNORED = re.compile(r"^(embeddings\.position_ids|pooler\..*|cls\..*)$")


class BertEncoder(nn.Module):
    """Word + position + token-type embeddings, their LayerNorm, and N post-LN encoder layers."""

    def __init__(self, config: ModelConfig, type_vocab_size: int = 2):
        super().__init__()
        self.config = config
        self.embed = nn.Embedding(config.vocab_size, config.d_model)             # W_word
        self.pos = nn.Embedding(config.max_positions, config.d_model)            # W_pos
        self.token_type = nn.Embedding(type_vocab_size, config.d_model)          # W_type
        self.embed_norm = LayerNorm(config.d_model, eps=config.norm_eps)
        self.layers = nn.ModuleList(EncoderLayer(config, i) for i in range(config.n_layers))

    def forward(self, ids: torch.Tensor, token_types: torch.Tensor | None = None, capture=None,
                intervention=None, key_visible: torch.Tensor | None = None) -> torch.Tensor:
        """Hidden states (B, T, d_model) of ids (B, T); every token attends to every token it may see
        (`key_visible` (B, 1, 1, T): False at a padded batch's padding, hidden from every query; None: all)."""
        positions = torch.arange(ids.shape[1], device=ids.device)
        types = torch.zeros_like(ids) if token_types is None else token_types
        h = self.embed_norm(self.embed(ids) + self.pos(positions)[None] + self.token_type(types))
        run = as_run(intervention)
        for layer in self.layers:
            h = layer(h, key_visible, capture, run)                              # full mask but the padding
        return h


# ----- loading -----------------------------------------------------------------------------
def _rules() -> list[tuple[re.Pattern, str]]:
    rules = []
    for hf, ours in BERT_WEIGHTS.items():
        regex = re.escape(hf).replace(r"\{i\}", r"(?P<i>\d+)").replace(r"\{p\}", r"(?P<p>weight|bias)")
        rules.append((re.compile(f"^{regex}$"), ours))
    return rules


def map_bert_weights(tensors: dict[str, torch.Tensor], source: str,
                     origins: dict[str, str] | None = None) -> dict[str, torch.Tensor]:
    """HF BertModel names (with or without the "bert." prefix of task models) -> ours; unknown names refused.
    `origins`, if given, gets each of our names' tensor name in the file (as weights.map_weights)."""
    rules, mapped = _rules(), {}
    for full_name, tensor in tensors.items():
        name = full_name.removeprefix("bert.")
        if BERT_IGNORED.match(name):
            continue
        for regex, ours in rules:
            match = regex.match(name)
            if match:
                mapped[ours.format(**match.groupdict())] = tensor
                if origins is not None:
                    origins[ours.format(**match.groupdict())] = full_name
                break
        else:
            raise ModelLoadError(f"{source}: weight {name!r} is not part of a BERT encoder.")
    return mapped


def build(hf_config: dict, tensors: dict[str, torch.Tensor], source: str = "checkpoint",
          device: str = "cpu", dtype: str = "float32") -> tuple[BertEncoder, ModelConfig]:
    """A BertEncoder from a BertConfig dict and BertModel tensors; names and shapes are checked."""
    config = bert_config(hf_config)
    check_runnable(config)
    with SkipParameterInit():                                # its values are the checkpoint's
        model = BertEncoder(config, int(hf_config.get("type_vocab_size", 2)))
    origins: dict[str, str] = {}
    mapped = map_bert_weights(tensors, source, origins)
    validate(mapped, model.state_dict(), source, origins)
    model.load_state_dict({name: tensor.float() for name, tensor in mapped.items()}, strict=True)
    model.to(device=resolve_device(device), dtype=torch_dtype(dtype)).requires_grad_(False)
    return model.eval(), config


def model_info(model: BertEncoder, config: ModelConfig, name: str) -> ModelInfo:
    weight = model.embed.weight
    return ModelInfo(
        name=name, family="bert", attention="mha", n_layers=config.n_layers, n_heads=config.n_heads,
        n_kv_heads=config.n_heads, d_model=config.d_model, d_qk=config.d_head, d_v=config.d_head,
        vocab_size=config.vocab_size, max_positions=config.max_positions,
        n_params=int(sum(p.numel() for p in model.parameters())),
        dtype=str(weight.dtype).removeprefix("torch."), device=str(weight.device),
        layer_kinds=config.layer_kinds, positional=config.positional, is_encoder_only=True)


def load(checkpoint, device: str = "cpu", dtype: str = "float32"):
    """A LoadedModel (building.LoadedModel) from an opened Checkpoint of model_type bert."""

    return load_built(checkpoint, build, model_info, device, dtype)


class EncoderRunner(Recorder):
    """The Decoder API over an encoder: prefill(ids) encodes and records; there is nothing to step."""

    can_generate = False

    def __init__(self, loaded, record=None, sampling=None, intervention=None):
        super().__init__(loaded, record or RecordOptions(), sampling, intervention)
        self.kv_cache = NoCache(self.config.n_layers)
        self.trace = Trace(model=loaded.info)

    def prefill(self, ids) -> Trace:
        """Encode the text: one "encode" StepRecord, in trace.steps and as trace.encoder."""
        ids = self.checked(ids)
        return self._keep(ids, self._encode(ids))

    def checked(self, ids) -> np.ndarray:
        """The ids of a text to encode, (T,) int64: at least one, within the positions and the vocabulary."""
        ids = np.asarray(getattr(ids, "ids", ids), dtype=np.int64).reshape(-1)
        if ids.size == 0:
            raise ExplorerError("the text is empty: give at least one token")
        if ids.size > self.config.max_positions:
            raise ContextOverflowError(
                f"the text has {ids.size} tokens, more than the model's {self.config.max_positions} positions")
        self._check_ids(ids)
        return ids

    def _keep(self, ids: np.ndarray, record: StepRecord) -> Trace:
        self.kv_cache.length = int(ids.size)
        self.trace = Trace(model=self.loaded.info, steps=(record,), encoder=record)
        return self.trace

    def step(self) -> Trace:
        raise ExplorerError(NO_DECODING)

    def force(self, token_id: int, forced: bool = True) -> Trace:
        raise ExplorerError(NO_DECODING)

    def back(self) -> Trace:
        return self.trace

    def logits_at(self, position: int) -> np.ndarray:
        raise ExplorerError(NO_DECODING)

    def logit_lens(self, position: int, k: int = 5):
        raise ExplorerError(NO_DECODING)

    def _encode(self, ids: np.ndarray) -> StepRecord:
        started = time.perf_counter()
        capture = StepCapture(self.config.n_layers)
        device = self.model.embed.weight.device
        with torch.inference_mode():
            ids_t = torch.as_tensor(ids, device=device)
            states = self.model(ids_t[None], None, capture, self.new_run())[0]          # (T, d_model)
            refuse_non_finite(states, self.loaded, **ENCODER_OUTPUT)
            positions = torch.arange(len(ids), device=device)
            record = self._encode_record(ids, capture, self.model.embed.weight[ids_t], self.model.pos.weight[positions])
        return replace(record, ms=(time.perf_counter() - started) * 1000.0)


def prefill_padded(runners: list[EncoderRunner], prompts: list) -> None:
    """Each runner's prefill of its prompt, from one pass over the prompts right-padded to the longest, S:

        ids (B, S), padding keys hidden from every query (BERT's attention mask), each row cut to its own n_b.

    Every sublayer but attention is row-wise, and a hidden key gets weight exactly 0, so each row's record
    is its prompt's pass alone (up to the rounding of a larger matmul). The runners share one model and one
    intervention, which the pass runs (intervention_run.Site takes a mean over each prompt's own rows and keeps a
    patched pattern off the padding's keys)."""
    first = runners[0]
    ids = [runner.checked(one) for runner, one in zip(runners, prompts)]
    lengths = [len(one) for one in ids]
    longest, device = max(lengths), first.model.embed.weight.device
    batch = np.zeros((len(ids), longest), dtype=np.int64)                       # padded with id 0, never seen
    for row, one in enumerate(ids):
        batch[row, : len(one)] = one
    visible = torch.as_tensor(np.arange(longest)[None, :] < np.array(lengths)[:, None], device=device)  # (B, S)
    captures = [StepCapture(first.config.n_layers) for _ in runners]
    own = _own_visibility(device)
    started = time.perf_counter()
    with torch.inference_mode():
        states = first.model(torch.as_tensor(batch, device=device), None, PaddedCapture(captures, lengths, own),
                             first.new_run(), visible[:, None, None, :])         # (B, S, d_model)
        positions = torch.arange(longest, device=device)
        for row, (runner, one, capture) in enumerate(zip(runners, ids, captures)):
            n = len(one)
            refuse_non_finite(states[row, :n], runner.loaded, **ENCODER_OUTPUT)
            record = runner._encode_record(one, capture, runner.model.embed.weight[torch.as_tensor(one, device=device)],
                                           runner.model.pos.weight[positions[:n]])
            runner._keep(one, replace(record, ms=(time.perf_counter() - started) * 1000.0 / len(runners)))


def _own_visibility(device):
    """n -> the Visibility an encoder's pass over n tokens alone attends with (encdec.padded), made once per n."""
    made: dict[int, object] = {}

    def own(n: int):
        if n not in made:
            made[n] = padded(np.arange(n), n, None, device)
        return made[n]

    return own


def padded_bytes(config, lengths: list[int]) -> int:
    """The memory a padded pass over prompts of `lengths` holds at its peak, roughly (float32), B prompts
    padded to S:  B S L (5 d + 4 d)  (every layer's rows and Q, K, V, O until the records are made)
    + B N S^2 (2 + L)  (one layer's scores and A, and every layer's kept maps)."""
    b, s = len(lengths), max(lengths)
    return 4 * b * s * (config.n_layers * 9 * config.d_model + config.n_heads * s * (2 + config.n_layers))


ENCODER_OUTPUT = {"what": "hidden states", "forward": "the encoder's forward pass"}   # refuse_non_finite's words


class NoCache:
    """An encoder keeps no KV cache: every query sees every key in the same pass. 0 bytes per layer."""

    def __init__(self, n_layers: int):
        self.n_layers, self.length = n_layers, 0

    def bytes_in_use(self, length: int | None = None) -> list[int]:
        return [0] * self.n_layers

    def bytes_allocated(self) -> list[int]:
        return [0] * self.n_layers

    def truncate(self, length: int) -> bool:
        return True

    def reset(self) -> None:
        self.length = 0
