"""The Python API: the engine the app draws, for notebooks and scripts.

    import explorer
    model = explorer.load("smollm2-135m")                 # a catalog name, HF folder or .gguf
    run = model.run("The capital of France is", steps=3)  # greedy unless sampling=explorer.Sampling(...)
    run.attention(3, 2)                                   # A = softmax(Q_h K_hᵀ / √d_QK), (N_Q, N_KV)
    run.show(3, 2)                                        # the same map as a figure (PNG/SVG inline)
    model.run(prompt, ablate=[(3, 2)], kernel="relu")     # experiments: core/intervention.py
    run.attribute(); model.heads(); model.patch(clean, corrupt, target=" Paris", against=" Rome")
    model.run(prompts, intervention=explorer.Intervention().ablate(9, 3, positions=[-1 + n]))  # a list of runs
    run.residual(5), run.cache["blocks.5.hook_attn_out"]  # activations by name: api_activations.py
    model.attribute(prompt, target=" Mary", against=" John")                     # api_research.py

A `Run` (api_run.py) holds one decoder (decode.Decoder, or the encoder / encoder-decoder
driver from drivers.make_decoder) and reads every number from its immutable
Trace: the same trace the app draws, the `trace` command saves and the session
file rebuilds. Importing this module imports neither torch nor Qt; torch is
imported by `load()`.
"""
from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from explorer import api_batches as batches
from explorer import api_checks as checks
from explorer import api_research
from explorer.api_run import Run
from explorer.core import kv_variants as kv
from explorer.core.errors import ContextOverflowError, ExplorerError
from explorer.core.families import can_generate
from explorer.core.loaders.config_file import read_config
from explorer.core.store import resolve
from explorer.views.token_text import warn_left_out

if TYPE_CHECKING:
    from explorer.core.intervention import Intervention
    from explorer.core.runtime import LoadedModel
    from explorer.core.sampling import Sampling
    from explorer.core.trace import ModelInfo

Prompt = str | Sequence[int] | np.ndarray


def load(name_or_path: str | Path, device: str = "cpu", dtype: str = "float32") -> Model:
    """Open a model: a catalog name (`python -m explorer models`), an HF folder or a .gguf file.

    `device` is cpu, cuda, cuda:N, mps or auto; `dtype` float32, bfloat16 or float16.
    Raises ModelLoadError (an ExplorerError) naming the file and the problem.
    """
    from explorer.core.runtime import load_model  # torch: imported by load(), not by `import explorer`

    path = resolve(name_or_path)
    reference = str(name_or_path) if Path(str(name_or_path)) != path else str(path.resolve())
    return Model(load_model(path, device=device, dtype=dtype), reference, device, dtype)


class Model:
    """A loaded model (runtime.LoadedModel) ready to run prompts."""

    def __init__(self, loaded: LoadedModel, reference: str | None = None, device: str = "cpu",
                 dtype: str = "float32") -> None:
        self.loaded = loaded
        self.reference = reference or (str(loaded.path) if loaded.path else loaded.name)
        self.device, self.dtype = device, dtype

    @property
    def info(self) -> ModelInfo:
        """Sizes and kinds: n_layers, n_heads (N_Q), n_kv_heads (N_KV), d_model, d_qk, attention, ..."""
        return self.loaded.info

    @property
    def name(self) -> str:
        return self.loaded.name

    def __repr__(self) -> str:
        i = self.info
        return (f"<explorer.Model {i.name}: {i.family}, {i.attention}, {i.n_layers} layers, "
                f"{i.n_heads}/{i.n_kv_heads} heads, {i.n_params:,} parameters on {i.device}>")

    def encode(self, prompt: Prompt) -> np.ndarray:
        """The ids of a prompt: a string through the model's tokenizer, or ids as given: (T,) int64."""
        if isinstance(prompt, str):
            if self.loaded.tokenizer is None:
                raise ExplorerError(f"{self.name} has no tokenizer: give the prompt as token ids")
            tokens = self.loaded.tokenizer.encode(prompt)
            warn_left_out(tokens.spans, tokens.source)
            ids = np.asarray(tokens.ids, dtype=np.int64)
        else:
            ids = checks.one_prompt_ids(prompt)
        if ids.size == 0:
            raise ExplorerError(f"the prompt {prompt!r} gives no tokens: write some text")
        return ids

    def _ids(self, prompt: Prompt, prepend_bos: bool | None = None) -> np.ndarray:
        """encode(prompt), with the model's BOS token first (True), never first (False) or as its
        tokenizer does (None); ids given as numbers are taken as they are unless prepend_bos says."""
        checks.bos_choice(prepend_bos)
        if not isinstance(prompt, str):
            prompt = checks.one_prompt_ids(prompt)
        ids = self.encode(prompt)
        if prepend_bos is None:
            return ids
        bos = getattr(self.loaded.tokenizer, "bos_id", None)
        if bos is None:
            raise ExplorerError(f"{self.name} has no BOS token: leave prepend_bos at None")
        has = ids.size > 0 and ids[0] == bos
        if prepend_bos and not has:
            return np.concatenate([[bos], ids]).astype(np.int64)
        if not prepend_bos and has:
            if ids.size == 1:
                raise ExplorerError("the prompt is only the BOS token: with prepend_bos=False nothing is left")
            return ids[1:]
        return ids

    def to_str_tokens(self, text: Prompt, prepend_bos: bool | None = None) -> list[str]:
        """The tokens of `text` as the model's tokenizer writes them (spaces shown as ␣, bytes as <0x..>)."""
        tokenizer = self.loaded.tokenizer
        if tokenizer is None:
            raise ExplorerError(f"{self.name} has no tokenizer: it has no token strings to show")
        return [tokenizer.display(int(i)) for i in self._ids(text, prepend_bos)]

    def to_single_token(self, text: str) -> int:
        """The id of `text` when it is one token (e.g. " Mary"); ExplorerError when it splits."""
        return checks.single_token(self.loaded.tokenizer, text, "text")

    def run(self, prompt: Prompt | Sequence[Prompt], steps: int = 0, sampling: Sampling | None = None,
            ablate: Sequence[tuple[int, int]] = (), kernel: str | None = None,
            kernel_layers: Sequence[int] | None = None, kernel_temperature: float = 1.0,
            intervention: Intervention | None = None, activations: Sequence[str] | None = None,
            prepend_bos: bool | None = None, progress=None, memory: int | None = None,
            record: str = "trace") -> Run | list[Run]:
        """Prefill `prompt` and decode `steps` tokens, recording every step; a list of prompts gives a list
        of runs, each equal to its prompt's run alone (`progress(done, total)` after each), prefilled in
        packed passes of at most `memory` bytes each (None: a quarter of the free memory; api_batches.runs).

        Greedy unless `sampling` says otherwise. `intervention` (explorer.Intervention) changes any term of
        the algebra; `ablate` zeroes the outputs O_h = A_h V_h of the given (layer, head) pairs before W^O;
        `kernel` ("exp", "linear" or "relu") replaces f_κ of A = Z⁻¹ f_κ(S) in `kernel_layers` (every
        layer when None), "exp" at `kernel_temperature` τ being exp(S / τ): exactly `trace --ablate L.H
        --kernel K --kernel-layers ... --temperature τ`. `activations` (TransformerLens hook names) are
        computed at once into run.cache; others are computed when first read. `record="logits"` records no
        layers (ids, tokens and logits only; activations are still computed on demand): a batch whose metric
        reads only logits then costs one plain forward pass.
        """
        checks.callback(progress, "progress")
        checks.bos_choice(prepend_bos)
        checks.activation_names(activations)
        options = dict(steps=steps, sampling=checks.sampling_of(sampling), ablate=ablate, kernel=kernel,
                       kernel_layers=kernel_layers, kernel_temperature=kernel_temperature, intervention=intervention,
                       activations=activations, prepend_bos=prepend_bos, record=checks.recording(record))
        if checks.is_batch(prompt):
            return batches.runs(self, prompt, options, progress, memory)
        return self._run_one(prompt, **options)

    def _run_one(self, prompt: Prompt, steps, sampling, ablate, kernel, kernel_layers, kernel_temperature,
                 intervention, activations, prepend_bos, record) -> Run:
        from explorer.core.sampling import Sampling  # torch: imported by load(), not by `import explorer`

        ids = self._ids(prompt, prepend_bos)
        steps = checks.whole(steps, "steps")
        if steps and not _can_generate(self.loaded):
            from explorer.core.encoder import NO_DECODING  # torch: imported by load(), not by `import explorer`

            raise ExplorerError(f"steps={steps}: {NO_DECODING}; use steps=0")
        context = self.loaded.config.max_positions
        if len(ids) + steps > context:
            raise ContextOverflowError(
                f"the prompt has {len(ids)} tokens; with {steps} steps it exceeds the model's context of {context}")
        whole = checks.intervention_of(ablate, kernel, kernel_layers, kernel_temperature, intervention, self.info)
        decoder = checks.decoder(self.loaded, sampling or Sampling(), len(ids) + steps, whole, record)
        decoder.prefill(ids)
        for _ in range(steps):
            decoder.step()
        run = Run(self, decoder, prompt if isinstance(prompt, str) else None, whole)
        if activations is not None:
            run.activations(activations)
        return run

    def attribute(self, prompt: Prompt | Sequence[Prompt], position: int | None = None,
                  token_id: int | None = None, target: str | int | Sequence | None = None,
                  against: str | int | Sequence | None = None, intervention: Intervention | None = None):
        """Who wrote a logit: embed + Σ heads + Σ FFNs + rest, the final norm frozen at `position` (default
        the last): explorer.core.attribution.

        With `target` (and `against`) it splits logit(target) − logit(against) instead, and gives the
        logit lens of that difference after each layer (api_research.LogitDifference). Without them,
        the logit of `token_id` (default: the top prediction). A list of prompts (with a list of targets)
        gives a list. Under `intervention` the parts are those of the intervened model.
        """

        return api_research.attribute(self, prompt, position, token_id, target, against, intervention)

    def patch(self, clean: Prompt, corrupt: Prompt, target: str | int, against: str | int | None = None,
              site: str = "head", metric="logit_diff", progress=None, cancel=None,
              intervention: Intervention | None = None, memory: int | None = None):
        """Activation patching: each site ("head": O_h, (L, H); "resid": the residual entering a layer at one
        position, (L, T)) taken from the clean run into the corrupted one, and logit(target) − logit(against)
        (or "prob", p(target), or a callable on the last position's logits (V,)) read at the last position,
        under `intervention`. Targets are one token each: " Paris" or an id.
        Lists of clean and corrupted prompts (and of targets) give api_research.PatchMaps: one map per pair
        and their mean. Its packed passes take at most `memory` bytes each, as run's."""

        return api_research.patch(self, clean, corrupt, target, against, site, metric, progress, cancel,
                                  intervention, memory)

    def _token(self, token: str | int, what: str) -> int:
        token_id = checks.single_token(self.loaded.tokenizer, token, what)
        vocab = self.loaded.config.vocab_size
        if not 0 <= token_id < vocab:
            raise ExplorerError(f"{what} {token_id} is outside the vocabulary of {vocab}")
        return token_id

    def heads(self, ids: Sequence[int] | Sequence[Sequence[int]] | None = None, repeat: int = 2, seed: int = 0,
              intervention: Intervention | None = None, memory: int | None = None):
        """Previous-token, induction and sink scores of every head, (L, H) each, on `ids` repeated
        `repeat` times (random ids of the vocabulary when None): explorer.core.head_scores. A list of
        id sequences gives the mean of their scores (api_research.heads), prefilled in packed passes of at
        most `memory` bytes each, as run's."""

        return api_research.heads(self, ids, repeat, seed, intervention, memory)


    def save_hf(self, folder: str | Path) -> Path:
        """Write the model as a Hugging Face folder (config.json, model.safetensors, tokenizer.json) that
        transformers loads with the same logits; a GGUF model's weights go out dequantized: core/save_hf.py."""
        from explorer.core.save_hf import save_hf  # torch: imported by load(), not by `import explorer`

        if not isinstance(folder, (str, os.PathLike)):
            raise ExplorerError(f"save_hf takes a folder's path, not {folder!r}")
        return save_hf(self.loaded, folder)


def _can_generate(loaded) -> bool:

    return can_generate(loaded)


def kv_table(path: str | Path, tokens: int | None = None, dtype: str = "float32",
             ranks: Sequence[int] | None = None) -> list[dict]:
    """The KV lab's table for a catalog name, model folder, config.json or .gguf (dimensions only, no weights):
    one dict per variant (MHA, GQA, MQA, MLA ranks) with its kv_heads, bytes_per_token and bytes_total."""

    tokens = None if tokens is None else checks.whole(tokens, "tokens")
    config, _ = read_config(resolve(path))
    shape = kv.cache_shape(config, source=str(path))
    rows = kv.compare(shape, tokens=tokens, dtype=dtype, ranks=None if ranks is None else list(ranks))
    return [row.as_json() for row in rows]
