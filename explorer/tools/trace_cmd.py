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

Long traces: `--layers l1,l2` writes attn_{l} (and enc_attn_{l}, cross_attn_{l}) only for those layers;
`--attention none` writes ids, logits and kv_bytes alone. Arrays are written one at a time, so a
layer's maps are made (on demand, from Q and K) only while that layer is written.

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

from explorer.core import files
from explorer.core.errors import ExplorerError
from explorer.tools import arguments


def add_arguments(parser) -> None:
    parser.add_argument("--model", required=True, help="model folder, .gguf file or catalog name")
    parser.add_argument("--prompt", type=arguments.text, required=True, help="the text to continue")
    parser.add_argument("--steps", type=arguments.steps, default=8, help="tokens to generate (default 8)")
    parser.add_argument("--device", type=arguments.device, default="cpu", help="cpu, cuda, mps or auto (default cpu)")
    parser.add_argument("--dtype", default="float32", choices=("float32", "bfloat16", "float16"))
    parser.add_argument("--temperature", type=arguments.sampling_number, default=None,
                        help="the sampling temperature, 0 = greedy (default); with --kernel: the exp kernel's tau")
    parser.add_argument("--sampling-temperature", type=arguments.sampling_number, default=None,
                        help="the sampling temperature whether or not --kernel is given (0 = greedy)")
    parser.add_argument("--top-k", type=arguments.sampling_number, default=0)
    parser.add_argument("--top-p", type=arguments.sampling_number, default=1.0)
    parser.add_argument("--seed", type=arguments.sampling_number, default=0)
    parser.add_argument("--out", required=True, help="the .npz file to write")
    parser.add_argument("--ablate", action="append", default=[], metavar="L.H",
                        help="zero head H of layer L before W^O (repeatable)")
    parser.add_argument("--kernel", choices=("exp", "linear", "relu"),
                        help="attention kernel f of A = Z^-1 f(S); exp with --temperature T is exp(S / T)")
    parser.add_argument("--kernel-layers", metavar="l1,l2,...", help="the layers --kernel applies to (default: all)")
    parser.add_argument("--layers", metavar="l1,l2,...", help="write attn_{l} only for these layers (default: all)")
    parser.add_argument("--attention", choices=("all", "none"), default="all",
                        help="none: write ids, logits and kv_bytes only (no attention maps)")


def run(args) -> int:
    # at run, not at the top: --help imports every command module, and sampling imports torch
    from explorer.api import load
    from explorer.core.sampling import Sampling

    if args.steps < 0:
        raise ExplorerError(f"--steps {args.steps} must not be negative")
    experiment, sampling_temperature = intervention_of(args)
    sampling = Sampling(temperature=sampling_temperature, top_k=args.top_k, top_p=args.top_p, seed=args.seed)
    layers = _layers(args.layers, "--layers")
    files.check_writable(args.out)                     # a target it cannot write is refused before the load
    model = load(args.model, device=args.device, dtype=args.dtype)
    bad = next((layer for layer in layers or () if not 0 <= layer < model.info.n_layers), None)
    if bad is not None:
        raise ExplorerError(f"--layers {args.layers!r} names layer {bad}; the model has layers 0 to "
                            f"{model.info.n_layers - 1}")
    if len(model.loaded.tokenizer.encode(args.prompt).ids) == 0:
        raise ExplorerError("--prompt gives no tokens: write some text")
    run = model.run(args.prompt, steps=args.steps, sampling=sampling, **experiment)
    run.save(args.out, layers=layers, attention=args.attention != "none")
    return 0


def intervention_of(args) -> tuple[dict, float]:
    """Model.run's experiment keywords (ablate, kernel, kernel_layers, kernel_temperature) that --ablate,
    --kernel, --kernel-layers and --temperature ask for, and the sampling temperature (see the module
    docstring for how --temperature reads with --kernel)."""
    experiment = {"ablate": [_layer_dot_head(text) for text in args.ablate]}
    if args.kernel:
        tau = 1.0 if args.temperature is None else args.temperature
        if args.kernel != "exp" and tau != 1.0:
            raise ExplorerError(f"--temperature {tau:g} is a temperature of the exp kernel, not of {args.kernel}")
        experiment.update(kernel=args.kernel, kernel_layers=_layers(args.kernel_layers), kernel_temperature=tau)
        sampling = args.sampling_temperature or 0.0
    else:
        if args.kernel_layers is not None:            # '' too: it was taken as not given (boundary27)
            raise ExplorerError("--kernel-layers needs --kernel")
        sampling = args.sampling_temperature if args.sampling_temperature is not None else (args.temperature or 0.0)
    return experiment, sampling


def _layer_dot_head(text: str) -> tuple[int, int]:
    layer, dot, head = text.partition(".")
    if not (dot and (layer + head).isascii() and layer.isdigit() and head.isdigit()):  # '³'.isdigit() too
        raise ExplorerError(f"--ablate {text!r} is not LAYER.HEAD, e.g. 3.5")
    return int(layer), int(head)


def _layers(text: str | None, flag: str = "--kernel-layers") -> tuple[int, ...] | None:
    if text is None:
        return None
    try:
        return tuple(int(part) for part in text.split(","))
    except ValueError:
        raise ExplorerError(f"{flag} {text!r} is not a comma-separated list of layers, e.g. 1,2") from None
