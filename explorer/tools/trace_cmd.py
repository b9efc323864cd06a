"""`python -m explorer trace`: decode N tokens and write every attention map and logit to an .npz.

Arrays (np.savez, no pickles):
  ids       int64   [T]         prompt ids, then the generated ids
  tokens    str     [T]         their display strings
  logits    float32 [T, V]      the logits computed at each position
  attn_{l}  float32 [H, T, T]   attention weights of layer l, zero where masked
  kv_bytes  int64   [T]         KV-cache bytes in use after each position (all layers)

Encoder-decoder models (the prompt is the source; ids, tokens and attn_{l} are the target's, from <s>):
  source_ids    int64   [S]                     the encoder's ids (with the task token)
  enc_attn_{l}  float32 [H, S, S]               encoder self-attention of layer l (full mask)
  cross_attn_{l} float32 [H, T_target, T_source] cross-attention of decoder layer l (row i: target token i)
Encoder-only models (BERT) have attn_{l} of their one pass and no logits.
"""
from __future__ import annotations

import numpy as np

from explorer.core.errors import ContextOverflowError, ExplorerError


def add_arguments(parser) -> None:
    parser.add_argument("--model", required=True, help="model folder, .gguf file or catalog name")
    parser.add_argument("--prompt", required=True, help="the text to continue")
    parser.add_argument("--steps", type=int, default=8, help="tokens to generate (default 8)")
    parser.add_argument("--device", default="cpu", help="cpu, cuda, mps or auto (default cpu)")
    parser.add_argument("--dtype", default="float32", choices=("float32", "bfloat16", "float16"))
    parser.add_argument("--temperature", type=float, default=0.0, help="0 = greedy (default)")
    parser.add_argument("--top-k", type=int, default=0)
    parser.add_argument("--top-p", type=float, default=1.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", required=True, help="the .npz file to write")


def decode(loaded, ids: np.ndarray, steps: int, sampling=None):
    """Prefill `ids` then step `steps` times with full recording; returns the Decoder."""
    from explorer.core.decode import RecordOptions
    from explorer.core.families import make_decoder
    from explorer.core.sampling import Sampling

    context = loaded.config.max_positions
    if len(ids) + steps > context:
        raise ContextOverflowError(
            f"the prompt has {len(ids)} tokens; with {steps} steps it exceeds the model's context of {context}")
    decoder = make_decoder(loaded, RecordOptions(dtype="float32"), sampling or Sampling(), capacity=len(ids) + steps)
    decoder.prefill(ids)
    for _ in range(steps):
        decoder.step()
    return decoder


def trace_arrays(decoder) -> dict[str, np.ndarray]:
    trace = decoder.trace
    n = trace.n_tokens
    arrays = {
        "ids": trace.token_ids.astype(np.int64),
        "tokens": np.array(trace.token_text, dtype=str),
        "kv_bytes": np.array([sum(decoder.kv_cache.bytes_in_use(t + 1)) for t in range(n)], dtype=np.int64),
    }
    if getattr(decoder, "can_generate", True):
        arrays["logits"] = np.stack([decoder.logits_at(p) for p in range(n)]).astype(np.float32)
    for layer in range(trace.model.n_layers):
        arrays[f"attn_{layer}"] = trace.attention(layer).astype(np.float32)
    if trace.model.is_encoder_decoder:
        arrays["source_ids"] = trace.encoder.token_ids.astype(np.int64)
        for layer, record in enumerate(trace.encoder.layers):
            arrays[f"enc_attn_{layer}"] = record.attn.weights.astype(np.float32)
        for layer in range(trace.model.n_layers):
            arrays[f"cross_attn_{layer}"] = trace.attention(layer, cross=True).astype(np.float32)
    return arrays


def run(args) -> int:
    from explorer.core.runtime import load_model
    from explorer.core.sampling import Sampling
    from explorer.core.store import resolve

    if args.steps < 0:
        raise ExplorerError(f"--steps {args.steps} must not be negative")
    sampling = Sampling(temperature=args.temperature, top_k=args.top_k, top_p=args.top_p, seed=args.seed)
    loaded = load_model(resolve(args.model), device=args.device, dtype=args.dtype)
    ids = loaded.tokenizer.encode(args.prompt).ids
    if len(ids) == 0:
        raise ExplorerError("--prompt gives no tokens: write some text")
    arrays = trace_arrays(decode(loaded, np.asarray(ids, dtype=np.int64), args.steps, sampling))
    try:
        with open(args.out, "wb") as handle:
            np.savez(handle, **arrays)
    except OSError as error:
        raise ExplorerError(f"cannot write {args.out}: {error.strerror}") from None
    return 0
