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

Interventions (explorer/core/intervention.py): the whole run, prefill and every step, is computed
under them, so logits and attn_{l} are the intervened ones; the npz then also holds
  intervention  str  []  the intervention as JSON (Intervention.to_json)
  --ablate L.H           zero the output O_h of head H in layer L (repeatable)
  --kernel K             f_kappa of A = Z^-1 f(S): exp, linear or relu, in the layers of
                         --kernel-layers l1,l2,... (every layer when absent)
  --temperature T        with --kernel exp: the kernel's temperature, f(x) = exp(x / T).
                         Without --kernel it is the sampling temperature, as before (0 = greedy);
                         with --kernel, decoding is greedy unless --sampling-temperature is given.
"""
from __future__ import annotations

import json

import numpy as np

from explorer.core.errors import ContextOverflowError, ExplorerError


def add_arguments(parser) -> None:
    parser.add_argument("--model", required=True, help="model folder, .gguf file or catalog name")
    parser.add_argument("--prompt", required=True, help="the text to continue")
    parser.add_argument("--steps", type=int, default=8, help="tokens to generate (default 8)")
    parser.add_argument("--device", default="cpu", help="cpu, cuda, mps or auto (default cpu)")
    parser.add_argument("--dtype", default="float32", choices=("float32", "bfloat16", "float16"))
    parser.add_argument("--temperature", type=float, default=None,
                        help="the sampling temperature, 0 = greedy (default); with --kernel: the exp kernel's tau")
    parser.add_argument("--sampling-temperature", type=float, default=None,
                        help="the sampling temperature whether or not --kernel is given (0 = greedy)")
    parser.add_argument("--top-k", type=int, default=0)
    parser.add_argument("--top-p", type=float, default=1.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", required=True, help="the .npz file to write")
    parser.add_argument("--ablate", action="append", default=[], metavar="L.H",
                        help="zero head H of layer L before W^O (repeatable)")
    parser.add_argument("--kernel", choices=("exp", "linear", "relu"),
                        help="attention kernel f of A = Z^-1 f(S); exp with --temperature T is exp(S / T)")
    parser.add_argument("--kernel-layers", metavar="l1,l2,...", help="the layers --kernel applies to (default: all)")


def decode(loaded, ids: np.ndarray, steps: int, sampling=None, intervention=None):
    """Prefill `ids` then step `steps` times with full recording (under `intervention`); returns the Decoder."""
    from explorer.core.decode import RecordOptions
    from explorer.core.families import make_decoder
    from explorer.core.sampling import Sampling

    context = loaded.config.max_positions
    if len(ids) + steps > context:
        raise ContextOverflowError(
            f"the prompt has {len(ids)} tokens; with {steps} steps it exceeds the model's context of {context}")
    decoder = make_decoder(loaded, RecordOptions(dtype="float32"), sampling or Sampling(), capacity=len(ids) + steps)
    decoder.set_intervention(intervention)
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
    intervention, sampling_temperature = intervention_of(args)
    sampling = Sampling(temperature=sampling_temperature, top_k=args.top_k, top_p=args.top_p, seed=args.seed)
    loaded = load_model(resolve(args.model), device=args.device, dtype=args.dtype)
    intervention.check(loaded.config.n_layers, loaded.config.n_heads)
    ids = loaded.tokenizer.encode(args.prompt).ids
    if len(ids) == 0:
        raise ExplorerError("--prompt gives no tokens: write some text")
    arrays = trace_arrays(decode(loaded, np.asarray(ids, dtype=np.int64), args.steps, sampling, intervention))
    if not intervention.is_empty:
        arrays["intervention"] = np.array(json.dumps(intervention.to_json()))
    try:
        with open(args.out, "wb") as handle:
            np.savez(handle, **arrays)
    except OSError as error:
        raise ExplorerError(f"cannot write {args.out}: {error.strerror}") from None
    return 0


def intervention_of(args):
    """The Intervention that --ablate, --kernel, --kernel-layers and --temperature ask for, and the
    sampling temperature (see the module docstring for how --temperature reads with --kernel)."""
    from explorer.core.intervention import HeadAblation, Intervention, Kernel, KernelChoice

    ablations = tuple(HeadAblation(*_layer_dot_head(text)) for text in args.ablate)
    kernels = ()
    if args.kernel:
        tau = 1.0 if args.temperature is None else args.temperature
        if args.kernel != "exp" and tau != 1.0:
            raise ExplorerError(f"--temperature {tau:g} is a temperature of the exp kernel, not of {args.kernel}")
        kernels = (KernelChoice(Kernel(args.kernel, tau), _layers(args.kernel_layers)),)
        sampling = args.sampling_temperature or 0.0
    else:
        if args.kernel_layers:
            raise ExplorerError("--kernel-layers needs --kernel")
        sampling = args.sampling_temperature if args.sampling_temperature is not None else (args.temperature or 0.0)
    return Intervention(kernels=kernels, ablations=ablations), sampling


def _layer_dot_head(text: str) -> tuple[int, int]:
    layer, dot, head = text.partition(".")
    if not (dot and layer.isdigit() and head.isdigit()):
        raise ExplorerError(f"--ablate {text!r} is not LAYER.HEAD, e.g. 3.5")
    return int(layer), int(head)


def _layers(text: str | None) -> tuple[int, ...] | None:
    if text is None:
        return None
    try:
        return tuple(int(part) for part in text.split(","))
    except ValueError:
        raise ExplorerError(f"--kernel-layers {text!r} is not a comma-separated list of layers, e.g. 1,2") from None
