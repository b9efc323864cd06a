"""The loaded model as a map: its computation as nodes and edges, each edge with its live shape.

    tokens → E[id] (+ P[pos]) → L × block → final norm → W_U → softmax

A decoder-only block is pre-norm, as Llama, Qwen, Mistral, GPT-2 and DeepSeek write it:

    h ← h + W^O · Attn(Norm(h))        h ← h + FFN(Norm(h))      (FFN or a mixture of experts)

Gemma 2 and 3 add a norm after each sublayer ("sandwich"); BERT and the original encoder–decoder
(Vaswani et al. 2017) are post-norm, h ← Norm(h + Attn(h)), and the decoder's blocks add
cross-attention, whose K and V come from the encoder's output C. The attention node names
its kind: MHA (N_KV = N_Q), GQA (N_Q / N_KV query heads share one K/V head), MQA (N_KV = 1),
MLA (K and V from a latent c_KV of width d_c, with a decoupled RoPE key of width d_R), and a
sliding window where the layer has one.

Facts come from the ModelInfo every panel has, and where given from the model's config (the
fields of core.config.ModelConfig or encdec.EncDecConfig as a dict): norm kind, FFN kind, the
mixture of experts, the encoder's depth. From 30 blocks on, the blocks before and after the
selected one fold into one node each, so the map stays readable. numpy-free and Qt-free.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from explorer.core.families import ModelFamily, row_named
from explorer.core.trace import ModelInfo

FOLD_AT = 30                      # a stack of this many blocks or more folds around the selected block
NORMS = {"rms": "RMSNorm", "rms_offset": "RMSNorm (1 + w)", "layer": "LayerNorm"}
# a family no row names: a decoder block's defaults (RMSNorm, a gated FFN, pre-norm, no sandwich)
_NO_ROW = ModelFamily("", None, "decoder", "decoder", "kv")


@dataclass(frozen=True)
class AttentionSpec:
    """What one attention node computes: A = softmax(Q K^T / √d_qk) per head, then O_h = A V."""

    kind: str                      # "MHA" | "GQA" | "MQA" | "MLA"
    n_q: int                       # N_Q query heads
    n_kv: int                      # N_KV key/value heads
    d_qk: int
    d_v: int
    latent: int | None = None      # d_c (MLA)
    rope_dim: int | None = None    # d_R (MLA)
    window: int | None = None      # keys within this many positions (a sliding layer)
    role: str = "self"             # "self" (causal) | "encoder" (bidirectional) | "cross"

    @property
    def group(self) -> int:
        """Query heads per K/V head: N_Q / N_KV."""
        return self.n_q // max(1, self.n_kv)

    def label(self) -> str:
        """One line for the node, e.g. 'GQA  N_Q=6, N_KV=2 (3 per K/V head)'."""
        if self.kind == "MLA":
            text = f"MLA  N_Q={self.n_q}, d_c={self.latent}, d_R={self.rope_dim}"
        elif self.kind == "GQA":
            text = f"GQA  N_Q={self.n_q}, N_KV={self.n_kv} ({self.group} per K/V head)"
        elif self.kind == "MQA":
            text = f"MQA  N_Q={self.n_q}, N_KV=1"
        else:
            text = f"MHA  N_Q={self.n_q}, N_KV={self.n_kv}"
        prefix = {"cross": "cross-attention · ", "encoder": "bidirectional · "}.get(self.role, "")
        window = f" · sliding window {self.window}" if self.window else ""
        return prefix + text + window


@dataclass(frozen=True)
class Node:
    key: str                       # unique: "dec.3.attn", "enc.0.ffn", "embed", "dec.fold.0-12"
    # tokens|embed|positions|norm|attention|w_o|add|ffn|moe|fold|final_norm|unembed|softmax|output
    kind: str
    label: str
    stack: str = "model"           # "decoder" | "encoder" | "model" (outside the blocks)
    layers: tuple[int, ...] = ()   # the blocks it stands for: (l,) in a block, a run in a fold
    attention: AttentionSpec | None = None
    detail: str = ""               # a second line: inner shapes, d_ff, experts


@dataclass(frozen=True)
class Edge:
    source: str
    target: str
    names: tuple[str, ...]         # ("T", "d") or ("N_Q", "T", "d_v")
    shape: tuple[int, ...]         # the live sizes of those names
    residual: bool = False         # the skip path around a sublayer

    @property
    def label(self) -> str:
        """'T×d = 7×192'."""
        return "×".join(self.names) + " = " + "×".join(str(n) for n in self.shape)


@dataclass(frozen=True)
class ModelGraph:
    nodes: tuple[Node, ...]
    edges: tuple[Edge, ...]
    tokens: int                    # T: the decoder's (or the encoder-only model's) tokens
    source_tokens: int = 0         # S: the encoder's tokens of an encoder–decoder
    folded: bool = False

    def same_drawing(self, other: "ModelGraph") -> bool:
        """Whether `other` draws the same boxes, labelled the same, and the same lines between them: only the
        live shapes (and the inner shapes of a node's detail) differ, as after a decoding step."""
        return ([(n.key, n.kind, n.label, n.layers) for n in self.nodes]
                == [(n.key, n.kind, n.label, n.layers) for n in other.nodes]
                and [(e.source, e.target, e.names, e.residual) for e in self.edges]
                == [(e.source, e.target, e.names, e.residual) for e in other.edges])

    def node(self, key: str) -> Node:
        return next(n for n in self.nodes if n.key == key)

    def of_kind(self, kind: str, stack: str | None = None) -> list[Node]:
        return [n for n in self.nodes if n.kind == kind and (stack is None or n.stack == stack)]

    def edges_into(self, key: str) -> list[Edge]:
        return [e for e in self.edges if e.target == key]

    def edges_from(self, key: str) -> list[Edge]:
        return [e for e in self.edges if e.source == key]

    def block_layers(self, stack: str = "decoder") -> list[int]:
        """The layers drawn as a whole block (unfolded) in `stack`."""
        return sorted({n.layers[0] for n in self.nodes if n.stack == stack and n.kind == "add"})


@dataclass(frozen=True)
class Facts:
    """The model's facts the map needs, from ModelInfo and (where known) its config."""

    info: ModelInfo
    norm: str
    ffn: str                       # "gated" | "mlp"
    d_ff: int | None
    post_norm: bool
    sandwich: bool
    encoder_layers: int
    experts: tuple[int, int, int, int] = (0, 0, 0, 0)   # (routed, shared, per token, first dense layers)
    activation: str = ""
    layer_kinds: tuple[str, ...] = field(default=())

    def is_moe(self, layer: int) -> bool:
        return self.experts[0] > 0 and layer >= self.experts[3]


def facts_of(info: ModelInfo, config: Mapping | None = None) -> Facts:
    """`info`'s facts, refined by `config` (a ModelConfig or EncDecConfig as a dict) where given."""
    config = dict(config or {})
    row = row_named(info.family) or _NO_ROW     # where no config says: the family's row (families.ModelFamily)
    encdec = info.is_encoder_decoder            # an encoder-decoder's blocks are LayerNorm, MLP and post-norm
    norm = config.get("norm") or ("layer" if encdec or row.layer_norm else "rms")
    ffn = config.get("ffn") or ("mlp" if encdec or row.layer_norm else "gated")
    experts = (int(config.get("n_routed_experts") or 0), int(config.get("n_shared_experts") or 0),
               int(config.get("experts_per_token") or 0), int(config.get("first_dense_layers") or 0))
    post = row.post_norm or encdec or info.is_encoder_only
    return Facts(info=info, norm=NORMS.get(norm, norm), ffn=ffn, d_ff=config.get("d_ff"), post_norm=post,
                 sandwich=bool(config.get("sandwich_norm", row.sandwich_norm)),
                 encoder_layers=int(config.get("n_encoder_layers") or info.n_layers), experts=experts,
                 activation=str(config.get("activation") or ""), layer_kinds=tuple(info.layer_kinds))


def attention_of(info: ModelInfo, layer: int, role: str = "self") -> AttentionSpec:
    """The attention of `layer`: its kind and grouping, latent sizes and window."""
    kind = info.attention.upper()
    sliding = role == "self" and layer < len(info.layer_kinds) and info.layer_kinds[layer] == "sliding"
    n_kv = info.n_heads if kind == "MLA" else info.n_kv_heads
    return AttentionSpec(kind=kind, n_q=info.n_heads, n_kv=n_kv, d_qk=info.d_qk, d_v=info.d_v,
                         latent=info.mla_rank, rope_dim=info.mla_rope_dim,
                         window=info.sliding_window if sliding else None, role=role)


def inner_shapes(spec: AttentionSpec, rows: int, keys: int) -> str:
    """The shapes inside an attention node for `rows` queries over `keys` keys."""
    q = f"Q: N_Q×T×d_qk = {spec.n_q}×{rows}×{spec.d_qk}"
    if spec.kind == "MLA":
        return (f"{q} · c_KV: T×d_c = {keys}×{spec.latent} · k_R: T×d_R = {keys}×{spec.rope_dim} · "
                f"A: N_Q×T×T = {spec.n_q}×{rows}×{keys}")
    return (f"{q} · K, V: N_KV×T×d_h = {spec.n_kv}×{keys}×{spec.d_qk} · A: N_Q×T×T = {spec.n_q}×{rows}×{keys}")


class _Builder:
    """Appends nodes and edges; `chain` wires one node to the next with the shape T×d."""

    def __init__(self, facts: Facts, tokens: int, source_tokens: int) -> None:
        self.facts, self.tokens, self.source_tokens = facts, tokens, source_tokens
        self.nodes: list[Node] = []
        self.edges: list[Edge] = []

    def add(self, node: Node) -> str:
        self.nodes.append(node)
        return node.key

    def edge(self, source: str, target: str, names, shape, residual: bool = False) -> None:
        self.edges.append(Edge(source, target, tuple(names), tuple(int(s) for s in shape), residual))

    def rows(self, stack: str) -> int:
        return self.source_tokens if stack == "encoder" else self.tokens

    def stream(self, source: str, target: str, stack: str, residual: bool = False) -> None:
        """The residual stream between two nodes: T×d (S×d in the encoder)."""
        name = "S" if stack == "encoder" and self.source_tokens else "T"
        self.edge(source, target, (name, "d"), (self.rows(stack), self.facts.info.d_model), residual)


def _attention(b: _Builder, prefix: str, stack: str, layer: int, role: str, into: str) -> str:
    """norm? → attention → W^O; returns the W^O node. `into` is the node whose output the queries read."""
    info = b.facts.info
    spec = attention_of(info, layer, role)
    keys = b.source_tokens if role == "cross" or stack == "encoder" else b.tokens
    rows = b.rows(stack)
    attn = b.add(Node(f"{prefix}.{role}", "attention", spec.label(), stack, (layer,), spec,
                      inner_shapes(spec, rows, keys)))
    b.stream(into, attn, stack)
    w_o = b.add(Node(f"{prefix}.{role}.w_o", "w_o", "W^O (concat heads)", stack, (layer,)))
    b.edge(attn, w_o, ("N_Q", "T", "d_v"), (spec.n_q, rows, spec.d_v))
    if role == "cross":
        b.edge("enc.out", attn, ("S", "d"), (b.source_tokens, info.d_model))
    return w_o


def _ffn(b: _Builder, prefix: str, stack: str, layer: int) -> str:
    f = b.facts
    if stack == "decoder" and f.is_moe(layer):
        routed, shared, per_token, _ = f.experts
        return b.add(Node(f"{prefix}.moe", "moe", f"MoE: top-{per_token} of {routed} experts + {shared} shared",
                          stack, (layer,), detail="router g = softmax/sigmoid(X W_r) picks each token's experts"))
    width = f"d_ff={f.d_ff}" if f.d_ff else "d_ff"
    formula = "W_down(σ(X W_gate) ⊙ X W_up)" if f.ffn == "gated" else "W_out σ(X W_in)"
    return b.add(Node(f"{prefix}.ffn", "ffn", f"FFN {formula}", stack, (layer,),
                      detail=f"{width}, σ={f.activation or 'act'}"))


def _sublayer(b: _Builder, prefix: str, stack: str, layer: int, h: str, what: str, role: str = "self") -> str:
    """One residual sublayer from the stream node `h`; returns the node the stream leaves by."""
    f = b.facts
    name = role if what == "attention" else "ffn"
    if f.post_norm:
        out = _attention(b, prefix, stack, layer, role, h) if what == "attention" else _ffn(b, prefix, stack, layer)
        if what != "attention":
            b.stream(h, out, stack)
        add = b.add(Node(f"{prefix}.{name}.add", "add", "+ (residual)", stack, (layer,)))
        b.stream(out, add, stack)
        b.stream(h, add, stack, residual=True)
        norm = b.add(Node(f"{prefix}.{name}.norm", "norm", f.norm, stack, (layer,)))
        b.stream(add, norm, stack)
        return norm
    norm = b.add(Node(f"{prefix}.{name}.norm", "norm", f.norm, stack, (layer,)))
    b.stream(h, norm, stack)
    out = _attention(b, prefix, stack, layer, role, norm) if what == "attention" else _ffn(b, prefix, stack, layer)
    if what != "attention":
        b.stream(norm, out, stack)
    if f.sandwich:
        post = b.add(Node(f"{prefix}.{name}.post_norm", "norm", f.norm + " (after)", stack, (layer,)))
        b.stream(out, post, stack)
        out = post
    add = b.add(Node(f"{prefix}.{name}.add", "add", "+ (residual)", stack, (layer,)))
    b.stream(out, add, stack)
    b.stream(h, add, stack, residual=True)
    return add


def _block(b: _Builder, stack: str, layer: int, h: str) -> str:
    prefix = f"{stack[:3]}.{layer}"
    role = "encoder" if stack == "encoder" or b.facts.info.is_encoder_only else "self"
    h = _sublayer(b, prefix, stack, layer, h, "attention", role)
    if stack == "decoder" and b.facts.info.is_encoder_decoder:
        h = _sublayer(b, prefix, stack, layer, h, "attention", "cross")
    return _sublayer(b, prefix, stack, layer, h, "ffn")


def _fold(b: _Builder, stack: str, layers: range, h: str) -> str:
    f = b.facts
    kinds = [f.layer_kinds[i] if i < len(f.layer_kinds) else "causal" for i in layers]
    counts = ", ".join(f"{k} ×{kinds.count(k)}" for k in dict.fromkeys(kinds))
    moe = sum(f.is_moe(i) for i in layers) if stack == "decoder" else 0
    detail = counts + (f", MoE ×{moe}" if moe else "")
    node = b.add(Node(f"{stack[:3]}.fold.{layers[0]}-{layers[-1]}", "fold",
                      f"{len(layers)} × block (layers {layers[0]}–{layers[-1]})", stack, tuple(layers), detail=detail))
    b.stream(h, node, stack)
    if stack == "decoder" and f.info.is_encoder_decoder:
        b.edge("enc.out", node, ("S", "d"), (b.source_tokens, f.info.d_model))
    return node


def _stack(b: _Builder, stack: str, n_layers: int, h: str, selected: int, fold_at: int) -> str:
    """n_layers blocks from the stream node `h`; from `fold_at` on, all but `selected` folded."""
    if n_layers < fold_at:
        for layer in range(n_layers):
            h = _block(b, stack, layer, h)
        return h
    selected = min(max(selected, 0), n_layers - 1)
    if selected > 0:
        h = _fold(b, stack, range(0, selected), h)
    h = _block(b, stack, selected, h)
    if selected < n_layers - 1:
        h = _fold(b, stack, range(selected + 1, n_layers), h)
    return h


def _inputs(b: _Builder, stack: str, tokens_key: str, positional: str) -> str:
    """tokens → E[id] (+ P[pos]); returns the node the first block reads."""
    info, rows = b.facts.info, b.rows(stack)
    short = stack[:3]
    tokens = b.add(Node(tokens_key, "tokens", "source tokens" if stack == "encoder" else "tokens (ids)", "model"))
    embed = b.add(Node(f"{short}.embed", "embed", "E[id]", stack, detail=f"E: V×d = {info.vocab_size}×{info.d_model}"))
    b.edge(tokens, embed, ("S" if stack == "encoder" else "T",), (rows,))
    if positional in ("learned", "sinusoidal"):
        pos = b.add(Node(f"{short}.positions", "positions", "+ P[pos]" + (" (sinusoidal)" if positional == "sinusoidal"
                                                                          else ""), stack))
        b.stream(embed, pos, stack)
        return pos
    return embed


def model_graph(info: ModelInfo, config: Mapping | None = None, tokens: int = 1, source_tokens: int = 0,
                selected_layer: int = 0, fold_at: int = FOLD_AT) -> ModelGraph:
    """The map of `info`'s model for T = `tokens` (and S = `source_tokens` encoder tokens)."""
    facts = facts_of(info, config)
    tokens = max(1, int(tokens))
    source_tokens = max(1, int(source_tokens)) if info.is_encoder_decoder else 0
    b = _Builder(facts, tokens, source_tokens)
    if info.is_encoder_decoder:
        h = _inputs(b, "encoder", "source", info.positional)
        h = _stack(b, "encoder", facts.encoder_layers, h, selected_layer, fold_at)
        b.stream(h, b.add(Node("enc.out", "output", "C (encoder output)", "encoder")), "encoder")
    positional = "rope" if info.positional == "rope" else info.positional
    h = _inputs(b, "decoder", "tokens", positional)
    h = _stack(b, "decoder", info.n_layers, h, selected_layer, fold_at)
    _head(b, h)
    return ModelGraph(tuple(b.nodes), tuple(b.edges), tokens, source_tokens,
                      folded=max(info.n_layers, facts.encoder_layers if info.is_encoder_decoder else 0) >= fold_at)


def _head(b: _Builder, h: str) -> None:
    """final norm → W_U → softmax (an encoder-only model ends with its contextual vectors)."""
    info, f = b.facts.info, b.facts
    if info.is_encoder_only:
        b.stream(h, b.add(Node("out", "output", "contextual vectors h", "model")), "decoder")
        return
    if not f.post_norm:
        norm = b.add(Node("final_norm", "final_norm", f.norm + " (final)", "model"))
        b.stream(h, norm, "decoder")
        h = norm
    unembed = b.add(Node("unembed", "unembed", "W_U (logits)", "model",
                         detail=f"W_U: d×V = {info.d_model}×{info.vocab_size}"))
    b.stream(h, unembed, "decoder")
    softmax = b.add(Node("softmax", "softmax", "softmax → p(next token)", "model"))
    b.edge(unembed, softmax, ("T", "V"), (b.tokens, info.vocab_size))
