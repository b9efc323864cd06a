"""One row per model_type: who reads its config, the weight names that map its checkpoints, who builds it,
which driver steps it, and what its cache holds. Everyone asks the row; nobody keeps a second list.

    model_type          config reader            weights  builder    driver     cache    gguf
    llama, smollm, ...  read_llama               DENSE    "decoder"  "decoder"  "kv"     "llama"
    bert                read_bert                None     "encoder"  "encoder"  "none"   "bert"
    explorer-encdec     EncDecConfig.from_json   None     "encdec"   "encdec"   "cross"  None

A row also carries what transformers assumes for the config.json keys its family leaves out
(`defaults`); for the GGUF files the engine builds (llama, gemma, gemma2, gemma3, phi3), the GGUF config
reader and tensor-name table (`gguf_reader`, `gguf_weights`), whether llama.cpp stores its norms as 1 + w
(`gguf_norm_plus_one`) and whether it permuted the W^Q and W^K rows for its RoPE (`gguf_permuted_qk`); what
the KV table's keys-only reading of its GGUF files adds, built or not (`gguf_dimensions`: Gemma 3's sliding
layers, MLA's head sizes);
where positions enter (`positional`: RoPE, or learned or sinusoidal embeddings, which have no rotary
dimensions to check); whether its checkpoints hold multi-token-prediction layers after the decoding ones
(`mtp_layers`, DeepSeek-V3), skipped on load; whether a norm follows each sublayer too (`sandwich_norm`,
Gemma 2 and 3: ModelConfig.from_hf and the model map read it); what the model map draws for a model opened
without its config (`layer_norm`: LayerNorm and a plain MLP, GPT-2, BERT and the encoder-decoder, which their
readers say too; `post_norm`: BERT's and the encoder-decoder's blocks); and how save_hf writes it back (`writing`:
model_type, class and config.json keys, hf_keys); for a multimodal wrapper, the model_type
its text_config is read as (`text_model`, Gemma 3's; families.text_config); and its line of the supported
models in docs/formats.md (`doc`, which tests/test_docs.py writes there).

A loaded model finds its row by ModelInfo.family (`family_of_model`): a decoder's config.family is a
model_type, and a row whose models report another name says so in `reports`.

Every fact the row holds is the value itself, imported from a module that needs nothing of the engine: the
config readers (config_readers gives a decoder's or BERT's fields, which ModelConfig.from_hf completes with the
row's facts; the encoder-decoder's is encdec_config's), the weight-name tables for safetensors and GGUF
(weight_names: plain strings and Layout values, which weights.py applies with torch), the GGUF config readers
(gguf_readers: plain Python over a parsed header) and save_hf's config writers (hf_keys). So this table stays
torch-free and gguf-free, below every module that reads it, because the numpy-only views read it too
(docs/architecture.md, "The family row").

Tokenizer facts are not per family: a GGUF file's vocabulary says its own kind and pre-tokenizer
(loaders/gguf_tokenizer.py reads tokenizer.ggml.model and .pre), and a Hugging Face folder's tokenizer.json
says the rest, so no row carries one.

Only the builders and drivers, the torch code that makes and steps a model, stay above the row, which names
them (`builder`, `driver`): runtime.BUILDERS and drivers.DRIVERS resolve the name in their own module, since
the row cannot import torch code. Every driver has the Decoder's API (prefill, step, back, force, trace,
kv_cache); `can_generate` says whether Step means anything.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from explorer.core.config_readers import (
    GEMMA3_GLOBAL_EVERY,
    read_bert,
    read_deepseek_v2,
    read_deepseek_v3,
    read_gemma,
    read_gemma2,
    read_gemma3,
    read_gpt2,
    read_helium,
    read_llama,
    read_mistral,
    read_phi3,
    read_qwen2,
    read_qwen3,
    read_seed_oss,
)
from explorer.core.encdec_config import EncDecConfig
from explorer.core.errors import UnsupportedModelError
from explorer.core.gguf_readers import (
    deepseek2_dimensions,
    gemma2_config,
    gemma3_config,
    gemma3_dimensions,
    gemma_config,
    llama_config,
    phi3_config,
)
from explorer.core.hf_keys import (
    HFWriting,
    deepseek_v2_keys,
    deepseek_v3_keys,
    gemma2_keys,
    gemma3_keys,
    gpt2_keys,
    llama_keys,
    mistral_keys,
    phi3_keys,
    qwen_keys,
    seed_oss_keys,
)
from explorer.core.weight_names import DEEPSEEK, DENSE, GEMMA3, GGUF_GEMMA3, GGUF_LLAMA, GGUF_PHI3, GPT2, PHI3


@dataclass(frozen=True)
class FamilyDoc:
    """A row's line in docs/formats.md's table of supported models (tests/test_docs.py writes the table)."""

    name: str               # as people call it, e.g. "Llama 2/3"
    attention: str          # its attention kinds, e.g. "GQA", "MHA/GQA/MQA (from `num_key_value_heads`)"
    differs: str            # what differs from the other rows' blocks


@dataclass(frozen=True)
class ModelFamily:
    model_type: str
    # HF name -> our names (weight_names), applied by weights.map_weights; None: the builder maps its own
    weights: dict | None = field(hash=False)
    builder: str            # "decoder": runtime.build_model | "encoder" | "encdec": runtime.BUILDERS' load
    driver: str             # "decoder" | "encoder" | "encdec": drivers.DRIVERS' name of its step driver
    cache: str              # "kv": the decoder's K/V (kv_variants) | "none": no cache | "cross": K/V + cross K/V
    gguf: str | None = None  # llama.cpp's general.architecture of this family's GGUF files, if it has one
    reports: str = ""        # the ModelInfo.family its loaded models carry, where that is not a model_type
    # the function reading its config.json dict, called by config.ModelConfig.from_hf: a dict of ModelConfig's
    # fields (config_readers), or the family's own config
    reader: Callable[[dict], object] | None = None
    # the (header, source) -> config.json dict function of the GGUF files it builds (gguf_readers)
    gguf_reader: Callable[[object, str], dict] | None = None
    gguf_weights: dict | None = field(default=None, hash=False)  # GGUF tensor name -> HF name (weight_names)
    # what the KV table's keys-only reading of its GGUF files adds, (header, config, source) (gguf_readers)
    gguf_dimensions: Callable[[object, dict, str], None] | None = None
    gguf_norm_plus_one: bool = False  # llama.cpp stores each norm weight as 1 + w (Gemma's x * (1 + w)): loaded - 1
    gguf_permuted_qk: bool = False  # llama.cpp interleaves W^Q and W^K rows for its RoPE (Llama): unpermuted on load
    defaults: dict = field(default_factory=dict, hash=False)  # config.json keys absent -> what transformers assumes
    positional: str = "rope"  # "rope" | "learned" | "sinusoidal": how positions enter (ModelConfig.positional)
    mtp_layers: bool = False  # layers past num_hidden_layers are multi-token prediction, not decoding: skipped
    sandwich_norm: bool = False  # a norm after each sublayer too, a = Norm(Attn(Norm(h))) (ModelConfig.sandwich_norm)
    # what the model map draws for a model opened without its config: blocks of LayerNorm and a plain MLP, as its
    # reader's ModelConfig.norm "layer" and ffn "mlp" (GPT-2, BERT, the encoder-decoder), else RMSNorm and a gated
    # FFN; and post-norm blocks, h <- Norm(h + sublayer(h)) (BERT, the encoder-decoder), else pre-norm
    layer_norm: bool = False
    post_norm: bool = False
    writing: HFWriting | None = None  # how save_hf writes a model of this row back (model_type, class, config keys)
    # a multimodal wrapper's config.json: its language model's config is its text_config, of this model_type
    text_model: str | None = None
    doc: FamilyDoc | None = None  # its line of docs/formats.md's supported models (every row has one)

    @property
    def decoder_only(self) -> bool:
        return self.builder == "decoder"


def _decoder(model_type: str, reader: Callable[[dict], dict] | None, table: dict, gguf: str | None = None,
             defaults: dict | None = None, gguf_reader: Callable[[object, str], dict] | None = None,
             gguf_weights: dict | None = None, **facts) -> ModelFamily:
    """A decoder-only row; `facts` are the other columns (positional, mtp_layers, sandwich_norm, writing) where
    they differ."""
    return ModelFamily(model_type, table, "decoder", "decoder", "kv", gguf, reader=reader, gguf_reader=gguf_reader,
                       gguf_weights=gguf_weights, defaults=defaults or {}, **facts)


# What transformers' config class of each family (5.x) assumes for a key that config.json leaves out.
# A key that is present keeps its value, null included: each reader says what null means (for the
# K/V heads, N_Q; for head_dim, d_model / N_Q; for sliding_window, no window).
_LLAMA_LIKE = {"max_position_embeddings": 2048, "rms_norm_eps": 1e-6, "tie_word_embeddings": False}
_QWEN = {**_LLAMA_LIKE, "max_position_embeddings": 32768, "use_sliding_window": False, "max_window_layers": 28,
         "num_key_value_heads": 32}
_GEMMA = {**_LLAMA_LIKE, "max_position_embeddings": 8192, "head_dim": 256, "tie_word_embeddings": True}
_DEEPSEEK = {**_LLAMA_LIKE, "q_lora_rank": 1536, "kv_lora_rank": 512, "qk_nope_head_dim": 128, "qk_rope_head_dim": 64,
             "v_head_dim": 128, "first_k_dense_replace": 0, "routed_scaling_factor": 1.0}


# gemma3 (the multimodal wrapper) has no reader: its text_config is read as gemma3_text (text_model, text_config).
FAMILIES = {row.model_type: row for row in (
    _decoder("llama", read_llama, DENSE, "llama", _LLAMA_LIKE, gguf_reader=llama_config, gguf_weights=GGUF_LLAMA,
             gguf_permuted_qk=True, writing=HFWriting("llama", "LlamaForCausalLM", llama_keys),
        doc=FamilyDoc("Llama 2/3", "MHA/GQA/MQA (from `num_key_value_heads`)",
                      "RoPE (incl. `llama3` scaling), RMSNorm, SwiGLU")),
    _decoder("smollm", read_llama, DENSE, None, _LLAMA_LIKE,
        doc=FamilyDoc("SmolLM", "MHA/GQA/MQA (from `num_key_value_heads`)",
                      "Llama's block, read as Llama (SmolLM2 checkpoints say `llama`)")),
    _decoder("mistral", read_mistral, DENSE, "mistral", {**_LLAMA_LIKE, "max_position_embeddings": 131072,
                                                         "sliding_window": 4096, "num_key_value_heads": 8},
             writing=HFWriting("mistral", "MistralForCausalLM", mistral_keys),
        doc=FamilyDoc("Mistral", "GQA",
                      "sliding-window attention")),
    _decoder("qwen2", read_qwen2, DENSE, "qwen2", _QWEN, writing=HFWriting("qwen2", "Qwen2ForCausalLM", qwen_keys),
        doc=FamilyDoc("Qwen2", "GQA/MQA",
                      "q/k/v bias")),
    _decoder("qwen3", read_qwen3, DENSE, "qwen3", {**_QWEN, "head_dim": 128},
             writing=HFWriting("qwen3", "Qwen3ForCausalLM", qwen_keys),
        doc=FamilyDoc("Qwen3", "GQA/MQA",
                      "q/k RMSNorm and a `head_dim` that differs from d/H")),
    _decoder("seed_oss", read_seed_oss, DENSE, None, {
        **_LLAMA_LIKE, "max_position_embeddings": 524288, "num_key_value_heads": 8, "head_dim": 128,
        "attention_bias": True, "bos_token_id": 0, "eos_token_id": 2},
        writing=HFWriting("seed_oss", "SeedOssForCausalLM", seed_oss_keys),
        doc=FamilyDoc("Seed-OSS", "GQA",
                      "Llama's block with q/k/v biases (`attention_bias`) and an optional o bias "
                      "(`attention_out_bias`)")),
    _decoder("helium", read_helium, DENSE, None, {
        **_LLAMA_LIKE, "max_position_embeddings": 4096, "rms_norm_eps": 1e-8, "head_dim": 128,
        "num_key_value_heads": 20, "rope_theta": 100000.0, "bos_token_id": 1, "eos_token_id": 2},
        writing=HFWriting("helium", "HeliumForCausalLM", llama_keys),
        doc=FamilyDoc("Helium", "MHA/GQA/MQA (from `num_key_value_heads`)",
                      "Llama's block with RoPE rotating neighbouring pairs (`rope_interleave`) and no o bias")),
    _decoder("phi3", read_phi3, PHI3, "phi3", {**_LLAMA_LIKE, "max_position_embeddings": 4096, "rms_norm_eps": 1e-5},
             gguf_reader=phi3_config, gguf_weights=GGUF_PHI3,
             writing=HFWriting("phi3", "Phi3ForCausalLM", phi3_keys),
        doc=FamilyDoc("Phi-3", "MHA/GQA/MQA (from `num_key_value_heads`)",
                      "fused qkv (split into N_Q·d_h, N_KV·d_h and N_KV·d_h rows) and gate/up weights split at load, "
                      "optional sliding window")),
    _decoder("gpt2", read_gpt2, GPT2, "gpt2", {"n_positions": 1024, "tie_word_embeddings": True},
             positional="learned", layer_norm=True,
             writing=HFWriting("gpt2", "GPT2LMHeadModel", gpt2_keys, prefix="transformer."),
        doc=FamilyDoc("GPT-2", "MHA",
                      "learned positions, LayerNorm, GELU, tied embeddings, Conv1D weights")),
    _decoder("gemma", read_gemma, DENSE, "gemma", {**_GEMMA, "num_key_value_heads": 16}, gguf_reader=gemma_config,
             gguf_weights=GGUF_LLAMA, gguf_norm_plus_one=True,
             writing=HFWriting("gemma", "GemmaForCausalLM", llama_keys),
        doc=FamilyDoc("Gemma", "MHA/MQA",
                      "Llama's block with RMSNorm (1 + w), √d embedding scale, GELU-tanh")),
    # Gemma 2 names its sandwich norms as Gemma 3 does, and has no q_norm or k_norm to map: Gemma 3's tables
    _decoder("gemma2", read_gemma2, GEMMA3, "gemma2", {
        **_GEMMA, "num_key_value_heads": 4, "sliding_window": 4096, "query_pre_attn_scalar": 256,
        "attn_logit_softcapping": 50.0, "final_logit_softcapping": 30.0}, sandwich_norm=True,
        gguf_reader=gemma2_config, gguf_weights=GGUF_GEMMA3, gguf_norm_plus_one=True,
        writing=HFWriting("gemma2", "Gemma2ForCausalLM", gemma2_keys),
        doc=FamilyDoc("Gemma 2", "GQA",
                      "sliding and global layers alternating, four norms per block, attention and final-logit soft-"
                      "caps, `query_pre_attn_scalar`")),
    _decoder("gemma3_text", read_gemma3, GEMMA3, "gemma3", {
        **_LLAMA_LIKE, "max_position_embeddings": 131072, "sliding_window": 4096, "head_dim": 256,
        "query_pre_attn_scalar": 256, "num_key_value_heads": 4, "tie_word_embeddings": True,
        "sliding_window_pattern": GEMMA3_GLOBAL_EVERY}, gguf_reader=gemma3_config, gguf_weights=GGUF_GEMMA3,
             gguf_dimensions=gemma3_dimensions,
        gguf_norm_plus_one=True, sandwich_norm=True,
        doc=FamilyDoc("Gemma 3 (text)", "MQA/GQA",
                      "sliding local and global layers with their own RoPE bases, q/k norms, four norms per block, √d"
                      " embedding scale, `query_pre_attn_scalar`, GELU-tanh")),
    # a Gemma 3's ModelConfig.family, whatever model_type it was read from; written back as gemma3_text
    _decoder("gemma3", None, GEMMA3, sandwich_norm=True, text_model="gemma3_text",
             writing=HFWriting("gemma3_text", "Gemma3ForCausalLM", gemma3_keys),
        doc=FamilyDoc("Gemma 3 (multimodal checkpoint)", "MQA/GQA",
                      "its language model alone: the `text_config`, read as Gemma 3 (text)")),
    _decoder("deepseek_v2", read_deepseek_v2, DEEPSEEK, "deepseek2", {
        **_DEEPSEEK, "topk_method": "greedy", "n_shared_experts": 2, "n_routed_experts": 64,
        "moe_intermediate_size": 1407}, gguf_dimensions=deepseek2_dimensions,
        writing=HFWriting("deepseek_v2", "DeepseekV2ForCausalLM", deepseek_v2_keys),
        doc=FamilyDoc("DeepSeek V2", "MLA",
                      "optional q LoRA, `kv_lora_rank` latent, decoupled RoPE key, MoE (routed + shared experts, "
                      "softmax scores, `topk_method` routing); the cache holds only c_KV and k_R and decoding uses "
                      "the absorbed matrices")),
    _decoder("deepseek_v3", read_deepseek_v3, DEEPSEEK, None, {
        **_DEEPSEEK, "max_position_embeddings": 4096, "routed_scaling_factor": 2.5, "n_group": 8, "topk_group": 4,
        "first_k_dense_replace": 3, "n_shared_experts": 1, "norm_topk_prob": True, "n_routed_experts": 256,
        "num_experts_per_tok": 8, "moe_intermediate_size": 2048}, mtp_layers=True,
        writing=HFWriting("deepseek_v3", "DeepseekV3ForCausalLM", deepseek_v3_keys),
        doc=FamilyDoc("DeepSeek V3", "MLA",
                      "DeepSeek V2's attention and cache; sigmoid router scores, group-limited top-k (`noaux_tc`) and"
                      " `norm_topk_prob`; its multi-token-prediction layers are skipped")),
    ModelFamily("bert", None, "encoder", "encoder", "none", gguf="bert", reader=read_bert, positional="learned",
                layer_norm=True, post_norm=True,
        doc=FamilyDoc("BERT (e.g. all-MiniLM-L6-v2)", "MHA, encoder",
                      "bidirectional full mask, no decoding (Step is disabled and says why)")),
    ModelFamily("explorer-encdec", None, "encdec", "encdec", "cross", reports="encdec",
                reader=EncDecConfig.from_json, positional="sinusoidal",
                layer_norm=True, post_norm=True,
        doc=FamilyDoc("Encoder–decoder (\"Attention Is All You Need\")", "MHA + cross-attention",
                      "sinusoidal positions, post-LN, cross K/V computed once from the encoder output")),
)}


def model_type_of_gguf(architecture: str) -> str | None:
    """The config.json model_type of a GGUF general.architecture, or None for one no row names."""
    row = gguf_named(architecture)
    return row.model_type if row is not None else None


def supported_gguf() -> str:
    """The GGUF architectures the engine builds, for a sentence: "'llama', 'gemma' and 'gemma3'"."""
    names = [repr(row.gguf) for row in FAMILIES.values() if row.gguf and row.gguf_reader]
    return ", ".join(names[:-1]) + " and " + names[-1] if len(names) > 1 else "".join(names)


def text_config(config: dict) -> dict:
    """The language-model part of a multimodal config.json (a row's `text_model`: Gemma 3's text_config, as
    that model_type), else the config itself."""
    row = FAMILIES.get(str(config.get("model_type") or ""))
    inner = config.get("text_config")
    if row is None or row.text_model is None or not isinstance(inner, dict):
        return config
    return {**inner, "model_type": row.text_model}


def gguf_named(architecture: str) -> ModelFamily | None:
    """The row whose GGUF files are of `architecture`, built by the engine or not (the KV table reads them)."""
    return next((row for row in FAMILIES.values() if row.gguf == architecture), None)


def gguf_row(architecture: str) -> ModelFamily | None:
    """The row that builds GGUF files of `architecture` (llama.cpp's general.architecture), or None."""
    return next((row for row in FAMILIES.values() if row.gguf == architecture and row.gguf_reader), None)


def row_named(family: str) -> ModelFamily | None:
    """The row of a ModelInfo.family or ModelConfig.family (a model_type, or a row's `reports`), or None."""
    return FAMILIES.get(family) or next((row for row in FAMILIES.values() if row.reports == family), None)


def family_of(hf_config: dict, source: str = "the config") -> ModelFamily:
    """The row of a config.json dict's model_type, or UnsupportedModelError naming the ones there are."""
    model_type = str(hf_config.get("model_type") or "")
    row = FAMILIES.get(model_type)
    if row is None:
        raise UnsupportedModelError(
            f"{source}: model_type {model_type!r} is not supported (supported: {', '.join(sorted(FAMILIES))})")
    return row


def builds(hf_config: dict) -> bool:
    """Whether a family module (not the decoder-only engine) builds a model of this config."""
    row = FAMILIES.get(str(hf_config.get("model_type") or ""))
    return row is not None and not row.decoder_only


def refuse_decoder_build(hf_config: dict, source: str) -> None:
    """runtime.build_model builds decoder-only models; the other families come only through load_model."""
    if builds(hf_config):
        raise UnsupportedModelError(
            f"{source}: model_type {hf_config['model_type']!r} is not a decoder-only model; open it with "
            "runtime.load_model, which builds it through explorer.core.families")


def family_of_model(loaded) -> ModelFamily:
    """The row of a loaded model, by the family its ModelInfo carries (a decoder's config.family is a model_type)."""
    family = loaded.info.family
    row = row_named(family)
    if row is None:
        raise UnsupportedModelError(f"{loaded.info.name}: family {family!r} has no row in explorer.core.families")
    return row


def can_generate(loaded_or_info) -> bool:
    """False for encoder-only models: the app disables Step (tooltip: encoder.NO_DECODING)."""
    info = getattr(loaded_or_info, "info", loaded_or_info)
    return not info.is_encoder_only
