"""From one forward pass's StepCapture to the trace's records, for every driver.

decode.Decoder, encdec_decode.EncDecDecoder and encoder.EncoderRunner all run
a model with a StepCapture and turn what it holds into AttentionRecord,
LayerRecord and StepRecord here: arrays copied to numpy in the record dtype,
the residual norm ||h||, and the top-k next tokens p = softmax(logits).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from explorer.core.attention_maps import ON_DEMAND_FROM
from explorer.core.capture import AttentionCapture, LayerCapture, StepCapture
from explorer.core.errors import ExplorerError
from explorer.core.intervention import NONE
from explorer.core.intervention_run import as_run
from explorer.core.trace import AttentionRecord, LayerRecord, StepRecord

RECORD_DTYPES = {"float32": torch.float32, "float16": torch.float16}
OPTIONAL_FIELDS = ("q_pre_rope", "k_pre_rope", "head_out", "latent", "k_rope", "edited_out")  # None: not recorded
ATTENTION_FIELDS = ("q", "k", "v", "weights") + OPTIONAL_FIELDS
ATTENTION_MODES = ("on_demand", "stored")


@dataclass(frozen=True)
class RecordOptions:
    """How the trace stores its arrays: float32 or float16, how many next-token candidates, and
    whether it also stores what the trace can derive (by default it derives them on demand)."""

    dtype: str = "float32"
    top_k: int = 10
    head_out: bool = False     # store O_h = A_h V_h per head (else Trace.head_out derives it from A and V)
    pre_rope: bool = False     # store Q and K before RoPE (else Trace.q_pre_rope rotates Q back)
    attention: str = "on_demand"   # "on_demand": a prefill's A is rebuilt from Q and K when asked; "stored"
    layers: bool = True        # False: no layer records (ids, tokens, candidates and the final states only)

    def __post_init__(self):
        if self.dtype not in RECORD_DTYPES:
            raise ExplorerError(f"record dtype {self.dtype!r} is not float32 or float16")
        if self.attention not in ATTENTION_MODES:
            raise ExplorerError(f"attention recording {self.attention!r} is not one of {', '.join(ATTENTION_MODES)}")

    @property
    def derived(self) -> frozenset:
        """What layer_records may leave out because the trace rebuilds it ("weights": see rebuildable)."""
        return frozenset({"weights"}) if self.attention == "on_demand" else frozenset()


def top_candidates(logits: torch.Tensor, k: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The k most likely next tokens of each row of logits (n, V) and their probabilities
    p = softmax(logits): probabilities and ids, each (n, k)."""
    return torch.softmax(logits, dim=-1, dtype=torch.float32).topk(k, dim=-1)


class Packer:
    """A at the mask's allowed entries, row by row: (N_Q, n_allowed).

    Masked weights are exactly 0, so the trace does not store them: a prefill's causal
    triangle takes half the dense square (AttentionRecord.weights unpacks on demand).
    Layers of one kind share their mask, so its flat indices are found once per step.
    """

    def __init__(self):
        self._indices: dict[int, tuple[np.ndarray, torch.Tensor | None]] = {}

    def __call__(self, weights: torch.Tensor, mask: np.ndarray) -> torch.Tensor:
        known = self._indices.get(id(mask))
        if known is None or known[0] is not mask:
            flat = None if mask.all() else torch.from_numpy(np.flatnonzero(mask)).to(weights.device)
            known = self._indices[id(mask)] = (mask, flat)
        flat_weights = weights.reshape(weights.shape[0], -1)                         # (N_Q, n_new * n_kv)
        return flat_weights if known[1] is None else flat_weights.index_select(1, known[1])




def rebuilds(n_new: int, n_kv: int, own_keys: bool) -> bool:
    """Whether a record of n_new query rows against n_kv keys rebuilds its A from its own Q and K
    instead of storing it: its keys are all the keys it attends (`own_keys`: a prefill, an encoder
    pass, cross-attention), it has more than one row (a decoding step's new row is recorded, for the
    views that show it as it comes), and it is long (ON_DEMAND_FROM entries: below that, stored maps
    cost little and the all-heads grid reduces them directly)."""
    return own_keys and n_new > 1 and n_new * n_kv >= ON_DEMAND_FROM


def rebuildable(captured: AttentionCapture) -> bool:
    """`rebuilds` for what one attention sublayer captured."""
    n_new, n_kv = captured.mask.shape
    return rebuilds(n_new, n_kv, captured.k.shape[-2] == n_kv)


def keeps_block_input(captured: AttentionCapture, skipped=frozenset()) -> bool:
    """Whether a layer's record keeps its block input X = Norm(h) (n_new, d_model): beside stored maps, yes;
    a pass whose A is rebuilt on demand (`rebuildable`: a long prefill) keeps what the model keeps, Q, K
    and V, and X is computed again when asked (activations.compute, name "attn_in"), by one pass. At
    8,000 tokens of SmolLM2, X took 0.55 GB of the trace's 1.49."""
    return not ("weights" in skipped and rebuildable(captured))


def attention_tensors(captured: AttentionCapture, skipped=frozenset(), shared=(),
                      pack: Packer | None = None) -> dict[str, torch.Tensor]:
    """The tensors one attention sublayer's record stores.

    Left out: what the layer did not capture, what is named in `skipped`, and what is
    `shared` by every step (the cross K/V, converted once). "weights" in `skipped` leaves
    the weights out only where the record can rebuild them (rebuildable).
    """
    tensors = {}
    for name in ATTENTION_FIELDS:
        value = getattr(captured, name)
        if value is not None and name != "weights" and name not in skipped and name not in shared:
            tensors[name] = value
    if not ("weights" in skipped and rebuildable(captured)):
        if captured.weights is None:
            raise ValueError("the pass computed no attention weights, and this record cannot rebuild them")
        tensors["weights"] = (pack or Packer())(captured.weights, captured.mask)
    return tensors


class MaskCompactor:
    """Each step's masks as their rules: the rule the pass made the mask by (StepContext.mask, the
    encoder's and cross-attention's full rule, TargetStep.mask). A mask that came without its rule
    (one an intervention edited, a packed pass's cut that differs from its own) stays dense: the
    rule is carried, never guessed back from the array."""

    def __call__(self, mask: np.ndarray, kv_positions: np.ndarray, rule=None):
        if mask.size <= SMALL or rule is None:              # a decoding step's row, or an edited mask
            return mask
        return rule


def attention_record(captured: AttentionCapture, arrays: dict[str, np.ndarray], masks: MaskCompactor | None = None,
                     **shared) -> AttentionRecord:
    """An AttentionRecord from one sublayer's capture and its converted `arrays`."""
    fields = {name: shared.get(name, arrays.get(name)) for name in OPTIONAL_FIELDS}
    mask = (masks or MaskCompactor())(captured.mask, captured.kv_positions, captured.rule)
    return AttentionRecord(q=shared.get("q", arrays.get("q")), k=shared.get("k", arrays.get("k")),
                           v=shared.get("v", arrays.get("v")), weights_packed=arrays.get("weights"),
                           mask=mask, kv_positions=captured.kv_positions, scale=float(captured.scale),
                           softcap=captured.softcap, kernel=captured.kernel, edited_heads=captured.edited_heads,
                           **fields)


def mark_edited(captured: AttentionCapture | None, intervention, layer: int, where: str) -> None:
    """Note on `captured` the heads whose O_h `intervention` replaced (ablated: 0 or the prompt mean; kept
    out by KeepOnly; patched) and keep their O_h, which the trace cannot derive as A_h V_h."""
    if captured is None or intervention is None or captured.head_out is None or captured.edited_heads:
        return
    plan = intervention.at(layer, captured.head_out.shape[0], where)
    heads = () if plan is None else plan.edited_heads
    if heads:
        captured.edited_heads, captured.edited_out = heads, captured.head_out[list(heads)]   # (n_edited, T, d_v)


SMALL = 1 << 14     # tensors up to this many elements are stacked and converted together


def to_numpy(groups: list[dict[str, torch.Tensor]], dtype: torch.dtype) -> list[dict[str, np.ndarray]]:
    """Every tensor of every group as a numpy array in `dtype`, copied to the host.

    A decoding step records ~10 small tensors per layer; converting each on its own costs
    more than the copying. Small tensors of the same name and shape are stacked and
    converted at once, and each record gets a view of its row; large ones (a prefill's) go
    one by one, which copies nothing more.
    """
    out: list[dict[str, np.ndarray]] = [{} for _ in groups]
    together: dict[tuple, list[int]] = {}
    for index, group in enumerate(groups):
        for name, tensor in group.items():
            if tensor.numel() <= SMALL:
                together.setdefault((name, tuple(tensor.shape)), []).append(index)
            else:
                out[index][name] = own_copy(tensor.detach().to("cpu", dtype)).numpy()
    for (name, _), members in together.items():
        stacked = torch.stack([groups[i][name] for i in members]).to("cpu", dtype).numpy()
        for row, index in enumerate(members):
            out[index][name] = stacked[row]
    return out


def own_copy(tensor: torch.Tensor) -> torch.Tensor:
    """`tensor`, copied where it is a view into a larger buffer (V of the Q|K|V projection, Q of the
    rotated Q|K), so that the record does not keep the whole buffer alive."""
    if tensor.untyped_storage().nbytes() > tensor.numel() * tensor.element_size():
        return tensor.contiguous() if not tensor.is_contiguous() else tensor.clone()
    return tensor


def residual_norm(h: torch.Tensor) -> torch.Tensor:
    """||h|| of each row of one layer's residual stream h (n_new, d): (n_new,) float32, on the host."""
    return torch.linalg.vector_norm(h.float(), dim=-1).cpu()


def residual_norms(captured: list[LayerCapture]) -> list[np.ndarray]:
    """||h|| of each new token's residual stream after each layer: per layer (n_new,), float32."""
    if all(layer.residual_norm is not None for layer in captured):     # taken as each layer ended
        return [layer.residual_norm.numpy() for layer in captured]
    residuals = [layer.residual for layer in captured]
    if residuals[0].numel() > SMALL:                       # a prefill: no (L, n_new, d) copy, one norm per layer
        return [residual_norm(h).numpy() for h in residuals]
    stacked = torch.stack(residuals)                                                        # (L, n_new, d)
    return list(torch.linalg.vector_norm(stacked.float(), dim=-1).cpu().numpy())


def layer_records(captured: list[LayerCapture], dtype: torch.dtype, kv_in_use=None, kv_allocated=None,
                  skipped=frozenset(), cross=None) -> tuple[LayerRecord, ...]:
    """Every layer's LayerRecord: its input X (where keeps_block_input), its attention, ||h|| after it and
    its cache bytes.

    `cross(layer, captured)`, where given, returns the (tensors, shared arrays) of the layer's
    cross-attention, or None for a model without one.
    """
    crosses = [cross(i, layer) if cross else None for i, layer in enumerate(captured)]
    groups, pack = [], Packer()
    for layer in captured:
        group = attention_tensors(layer.attn, skipped=skipped, pack=pack)
        if layer.x is not None and keeps_block_input(layer.attn, skipped):
            group["x"] = layer.x                           # not an attention field: no clash
        groups.append(group)
    cross_groups = [crossed[0] for crossed in crosses if crossed is not None]
    converted = to_numpy(groups + cross_groups, dtype)
    cross_arrays = iter(converted[len(groups):])
    norms = residual_norms(captured)
    records, masks = [], MaskCompactor()
    for i, (layer, arrays, crossed) in enumerate(zip(captured, converted, crosses)):
        cross_record = None
        if crossed is not None:
            cross_record = attention_record(layer.cross, next(cross_arrays), masks, **crossed[1])
        records.append(LayerRecord(
            x=arrays.get("x"), attn=attention_record(layer.attn, arrays, masks), residual_norm=norms[i],
            kv_bytes_in_use=int(kv_in_use[i]) if kv_in_use is not None else 0,
            kv_bytes_allocated=int(kv_allocated[i]) if kv_allocated is not None else 0, cross=cross_record))
    return tuple(records)


class RecordingCapture(StepCapture):
    """A StepCapture that trims each layer of a long pass as soon as the layer is done: what the
    record leaves out is dropped, and what it keeps is copied out of the larger buffers it is a
    view of, in the record dtype. A long prefill then holds one layer's temporaries at a time
    beside the recorded arrays, instead of every layer's."""

    BLOCK_FIELDS = ("residual_in", "attn_out", "ffn_out", "cross_out", "residual")   # not recorded: ||h|| only

    def __init__(self, n_layers: int, weights: bool, skipped: frozenset, dtype: torch.dtype, intervention=None):
        super().__init__(n_layers, weights)
        self.skipped, self.dtype = skipped, dtype
        self.intervention = intervention if "head_out" in skipped else None    # whose edited O_h to keep

    def block(self, layer: int, **tensors) -> None:
        super().block(layer, **tensors)
        captured = self.layers[layer]
        for where, attn in (("self", captured.attn), ("cross", captured.cross)):
            mark_edited(attn, self.intervention, layer, where)
        if captured.attn is None or captured.x is None or captured.x.numel() <= SMALL:
            return
        captured.residual_norm = residual_norm(captured.residual)      # h itself: (T, d) a layer, not recorded
        for name in self.BLOCK_FIELDS:
            setattr(captured, name, None)
        attn = captured.attn
        kept = keeps_block_input(attn, self.skipped)
        captured.x = own_copy(captured.x.detach().to("cpu", self.dtype)) if kept else None
        if "weights" in self.skipped and rebuildable(attn):
            attn.weights = None
        for name in ATTENTION_FIELDS:
            value = getattr(attn, name)
            if value is not None and name in self.skipped and name in OPTIONAL_FIELDS:
                setattr(attn, name, None)
            elif value is not None and name != "weights":
                setattr(attn, name, own_copy(value.detach().to("cpu", self.dtype)))


class FinalStatesCapture(StepCapture):
    """The capture of a pass recorded without its layers (RecordOptions.layers False): it keeps nothing, and
    asks for no A, so every layer may take the fused path. The pass is the model's own; the trace then holds
    the ids, tokens and next-token candidates, and the decoder the final states h_L the logits come from.
    A batch whose metric reads only logits then pays what a plain forward pays, not eight full records."""

    def __init__(self):
        super().__init__(0, weights=False)

    def attention(self, layer: int, record: AttentionCapture, cross: bool = False) -> None:
        pass

    def block(self, layer: int, **tensors) -> None:
        pass


class Recorder:
    """What every driver holds (the loaded model, record and sampling options) and how it records."""

    def __init__(self, loaded, record: RecordOptions, sampling, intervention=None):
        self.loaded, self.model, self.config = loaded, loaded.model, loaded.config
        self.record, self.sampling = record, sampling
        self.intervention = intervention or NONE            # intervention.Intervention, read by every pass

    def set_sampling(self, sampling) -> None:
        self.sampling = sampling

    def set_intervention(self, intervention) -> None:
        """Run the next prefill (and the steps after it) under `intervention` (None: none)."""
        self.intervention = intervention or NONE

    def new_run(self):
        """A fresh intervention_run.InterventionRun of the intervention (None when it changes nothing)."""
        return as_run(self.intervention)

    def _new_capture(self, n_new: int, n_cached: int) -> StepCapture:
        """The capture of a pass over n_new tokens after n_cached: it asks for A only where the
        record keeps it (a prefill's is rebuilt on demand, see rebuildable), and keeps of each
        finished layer only what the record will (RecordingCapture); nothing where no layer is recorded."""
        if not self.record.layers:
            return FinalStatesCapture()
        rebuilt = "weights" in self.record.derived and rebuilds(n_new, n_new, own_keys=n_cached == 0)
        skipped = getattr(self, "_skipped", frozenset)() | self.record.derived
        return RecordingCapture(self.config.n_layers, not rebuilt, skipped, RECORD_DTYPES[self.record.dtype],
                                self._running_intervention())

    def _running_intervention(self):
        """The Intervention the pass about to be recorded runs under: a driver's run of it (set at its
        prefill; set_intervention waits for the next one), else the one set."""
        run = self._intervened if hasattr(self, "_intervened") else as_run(self.intervention)
        return None if run is None else run.intervention

    def _check_ids(self, ids: np.ndarray) -> None:
        size = self.config.vocab_size
        bad = ids[(ids < 0) | (ids >= size)]
        if bad.size:
            tokenizer = self.loaded.tokenizer
            # an id the model's own tokenizer can give: the files disagree, not the person's prompt (boundary27)
            source = getattr(tokenizer, "source", "the tokenizer")
            named = source if source == "the tokenizer" else f"the tokenizer of {source}"
            knows = getattr(tokenizer, "knows", None)
            why = (f"; {named} holds a token of that id, past the model's embedding of {size:,} rows, so the "
                   "tokenizer and the weights do not belong together" if callable(knows) and knows(int(bad[0]))
                   else "")
            raise ExplorerError(f"token id {int(bad[0])} is outside the vocabulary of {size} (ids 0 to {size - 1})"
                                f"{why}.")

    def _np(self, tensor: torch.Tensor) -> np.ndarray:
        return tensor.detach().to("cpu", RECORD_DTYPES[self.record.dtype]).numpy()

    def _texts(self, ids: np.ndarray) -> tuple[str, ...]:
        tokenizer = self.loaded.tokenizer
        return tuple(tokenizer.display(int(i)) if tokenizer is not None else str(int(i)) for i in ids)

    def _encode_record(self, ids: np.ndarray, capture: StepCapture, embeddings: torch.Tensor,
                       pos_embeddings: torch.Tensor) -> StepRecord:
        """The "encode" StepRecord of a bidirectional pass over `ids`: full masks, no cache, no next token."""
        return StepRecord(
            kind="encode", positions=np.arange(len(ids), dtype=np.int64), token_ids=ids.copy(),
            token_text=self._texts(ids), embeddings=self._np(embeddings),
            layers=layer_records(capture.layers, RECORD_DTYPES[self.record.dtype], skipped=self.record.derived),
            top_ids=np.zeros((len(ids), 0), dtype=np.int64), top_probs=np.zeros((len(ids), 0), dtype=np.float32),
            pos_embeddings=self._np(pos_embeddings))
