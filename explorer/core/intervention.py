"""Interventions: a frozen value that says which term of the attention algebra to change.

An `Intervention` is passed into a model's forward next to the capture (no hooks, no
globals). The attention core (attention.attend) reads it at one place: where

    A_h = Z^-1 f_kappa(S_h),  S_h = Q_h K_h^T * scale,  Z = diag(row sums over the visible keys)

is normalised and where O_h = A_h V_h is formed, before W^O. It can

- swap the kernel f_kappa per layer (`Kernel`): exp (the model's own softmax, with its
  scale and softcap), exp with a temperature tau (f(x) = exp(x / tau)), linear (f(x) = x)
  or relu (f(x) = max(0, x)). Masked entries contribute 0; a row whose Z is 0 is all zeros;
- ablate heads (`HeadAblation`, zero or the mean over the prompt's positions of O_h), or keep
  only some (`KeepOnly`);
- hide entries of the mask (`HideEntry`, `HideToken`, `HideBand`);
- patch head outputs O_h (`HeadPatch`) or the residual stream entering a block
  (`ResidualPatch`) with values from another run (activation patching).

Torch-free: the trace records the `Kernel` it was computed with, and the app saves an
intervention in its session file (`to_json` / `from_json`; patches hold arrays and stay out).
A layer-scoped entry names its sublayer by `where`: "self" (the model's attention; BERT's and
a decoder's self-attention), "cross" (an encoder-decoder's cross-attention), or "encoder"
(an encoder-decoder's encoder layers).
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from functools import cached_property

import numpy as np

from explorer.core.errors import ExplorerError

KERNELS = ("exp", "linear", "relu")
WHERE = ("self", "cross", "encoder")
ABLATION_MODES = ("zero", "mean")


@dataclass(frozen=True)
class Kernel:
    """f_kappa of A = Z^-1 f_kappa(S): "exp" (softmax at temperature tau), "linear" or "relu"."""

    name: str = "exp"
    temperature: float = 1.0          # tau of exp(S / tau); only for "exp"

    def __post_init__(self):
        if self.name not in KERNELS:
            raise ExplorerError(f"kernel {self.name!r} is not one of {', '.join(KERNELS)}")
        if not self.temperature > 0:
            raise ExplorerError(f"kernel temperature {self.temperature} must be above 0")
        if self.name != "exp" and self.temperature != 1.0:
            raise ExplorerError(f"a temperature applies to the exp kernel only, not to {self.name!r}")

    @property
    def is_model_softmax(self) -> bool:
        return self.name == "exp" and self.temperature == 1.0

    def formula(self) -> str:
        """The kernel as the attention formula writes it."""
        if self.name == "linear":
            return "A = Z⁻¹ S"
        if self.name == "relu":
            return "A = Z⁻¹ max(0, S)"
        if self.temperature != 1.0:
            return f"A = softmax(S / {self.temperature:g})"
        return "A = softmax(S)"


SOFTMAX = Kernel()


def _layer_range(first: int, last: int | None, layer: int) -> bool:
    return first <= layer and (last is None or layer <= last)


@dataclass(frozen=True)
class KernelChoice:
    """Use `kernel` in the listed layers (None: every layer) of sublayer `where`."""

    kernel: Kernel
    layers: tuple[int, ...] | None = None
    where: str = "self"

    def applies(self, layer: int, where: str) -> bool:
        return where == self.where and (self.layers is None or layer in self.layers)


@dataclass(frozen=True)
class HeadAblation:
    """O_h of head `head` in `layer` replaced by 0 ("zero") or by its mean over the prompt ("mean")."""

    layer: int
    head: int
    mode: str = "zero"
    where: str = "self"


@dataclass(frozen=True)
class KeepOnly:
    """Every head of sublayer `where` not in `heads` ((layer, head) pairs) is ablated with `mode`."""

    heads: tuple[tuple[int, int], ...]
    mode: str = "zero"
    where: str = "self"


@dataclass(frozen=True)
class HideEntry:
    """Hide the key at position `key` from the query at position `query` (layers first..last)."""

    query: int
    key: int
    first_layer: int = 0
    last_layer: int | None = None
    where: str = "self"

    def hides(self, queries: np.ndarray, keys: np.ndarray) -> np.ndarray:
        return (queries[:, None] == self.query) & (keys[None, :] == self.key)


@dataclass(frozen=True)
class HideToken:
    """Hide the token at position `key` from every query of layers first..last."""

    key: int
    first_layer: int = 0
    last_layer: int | None = None
    where: str = "self"

    def hides(self, queries: np.ndarray, keys: np.ndarray) -> np.ndarray:
        return np.broadcast_to(keys[None, :] == self.key, (len(queries), len(keys)))


@dataclass(frozen=True)
class HideBand:
    """Hide every entry whose offset i - j (query minus key position) lies in low..high."""

    low: int
    high: int | None = None           # None: no upper end (hide everything at least `low` back)
    first_layer: int = 0
    last_layer: int | None = None
    where: str = "self"

    def hides(self, queries: np.ndarray, keys: np.ndarray) -> np.ndarray:
        offset = queries[:, None] - keys[None, :]
        return (offset >= self.low) & (offset <= (np.inf if self.high is None else self.high))


@dataclass(frozen=True, eq=False)
class HeadPatch:
    """O_h of head `head` in `layer` at positions start.. replaced by `values` (n, d_v).

    `sequence`: in a pass that packs several sequences (patching.py), only that one's rows."""

    layer: int
    head: int
    values: np.ndarray
    start: int = 0
    where: str = "self"
    sequence: int | None = None


@dataclass(frozen=True, eq=False)
class ResidualPatch:
    """The residual stream entering block `layer` at `position` replaced by `value` (d_model,)."""

    layer: int
    position: int
    value: np.ndarray
    sequence: int | None = None


EDIT_TYPES = {"entry": HideEntry, "token": HideToken, "band": HideBand}


@dataclass(frozen=True)
class LayerIntervention:
    """What one attention sublayer (`layer`, `where`) changes: its kernel, visibility and head outputs."""

    kernel: Kernel = SOFTMAX
    edits: tuple = ()                                   # HideEntry | HideToken | HideBand
    ablated: tuple[tuple[int, str], ...] = ()           # (head, mode)
    patches: tuple[HeadPatch, ...] = ()

    def hidden(self, queries: np.ndarray, keys: np.ndarray) -> np.ndarray | None:
        """(T, n_kv) bool, True where an edit hides the entry; None when no edit applies."""
        if not self.edits:
            return None
        out = np.zeros((len(queries), len(keys)), dtype=bool)
        for edit in self.edits:
            out |= edit.hides(queries, keys)
        return out


@dataclass(frozen=True)
class Intervention:
    """Every change to one run, as values. The empty Intervention changes nothing."""

    kernels: tuple[KernelChoice, ...] = ()
    ablations: tuple[HeadAblation, ...] = ()
    keep_only: KeepOnly | None = None
    edits: tuple = ()                                   # HideEntry | HideToken | HideBand
    head_patches: tuple[HeadPatch, ...] = field(default=(), compare=False)
    residual_patches: tuple[ResidualPatch, ...] = field(default=(), compare=False)

    def __post_init__(self):
        for item in (*self.kernels, *self.ablations, *self.edits, *self.head_patches,
                     *([self.keep_only] if self.keep_only else [])):
            if item.where not in WHERE:
                raise ExplorerError(f"sublayer {item.where!r} is not one of {', '.join(WHERE)}")
        for mode in [a.mode for a in self.ablations] + ([self.keep_only.mode] if self.keep_only else []):
            if mode not in ABLATION_MODES:
                raise ExplorerError(f"ablation {mode!r} is not one of {', '.join(ABLATION_MODES)}")

    @property
    def is_empty(self) -> bool:
        return not (self.kernels or self.ablations or self.keep_only or self.edits or self.head_patches
                    or self.residual_patches)

    def kernel_of(self, layer: int, where: str = "self") -> Kernel:
        """The kernel of (layer, where): the last choice that names it, else the model's softmax."""
        chosen = [choice.kernel for choice in self.kernels if choice.applies(layer, where)]
        return chosen[-1] if chosen else SOFTMAX

    def at(self, layer: int, n_heads: int, where: str = "self") -> LayerIntervention | None:
        """What sublayer (layer, where) changes, or None when nothing (the unintervened path)."""
        key = (layer, n_heads, where)
        if key not in self._sites:
            self._sites[key] = self._site(layer, n_heads, where)
        return self._sites[key]

    @cached_property
    def _sites(self) -> dict:
        return {}

    def _site(self, layer: int, n_heads: int, where: str) -> LayerIntervention | None:
        ablated = {a.head: a.mode for a in self.ablations if a.layer == layer and a.where == where}
        if self.keep_only is not None and self.keep_only.where == where:
            kept = {h for l, h in self.keep_only.heads if l == layer}
            ablated.update({h: self.keep_only.mode for h in range(n_heads) if h not in kept and h not in ablated})
        for head in ablated:
            if not 0 <= head < n_heads:
                raise ExplorerError(f"head {head} of layer {layer} does not exist: the layer has {n_heads} heads")
        site = LayerIntervention(
            kernel=self.kernel_of(layer, where),
            edits=tuple(e for e in self.edits if e.where == where and _layer_range(e.first_layer, e.last_layer, layer)),
            ablated=tuple(sorted(ablated.items())),
            patches=tuple(p for p in self.head_patches if p.layer == layer and p.where == where))
        return None if site == LayerIntervention() and not site.patches else site

    def residual_patches_at(self, layer: int) -> tuple[ResidualPatch, ...]:
        return tuple(p for p in self.residual_patches if p.layer == layer)

    def check(self, n_layers: int, n_heads: int) -> None:
        """Raise ExplorerError when an entry names a layer or head the model does not have."""
        layers = [a.layer for a in self.ablations] + [p.layer for p in self.head_patches] + \
            [l for choice in self.kernels for l in (choice.layers or ())] + \
            [l for l, _ in (self.keep_only.heads if self.keep_only else ())]
        for layer in layers:
            if not 0 <= layer < n_layers:
                raise ExplorerError(f"layer {layer} does not exist: the model has {n_layers} layers (0..{n_layers - 1})")
        for layer, head in [(a.layer, a.head) for a in self.ablations] + list(self.keep_only.heads if self.keep_only else ()):
            if not 0 <= head < n_heads:
                raise ExplorerError(f"head {head} of layer {layer} does not exist: layers have {n_heads} heads")

    # ----- the session file ---------------------------------------------------------------
    def to_json(self) -> dict:
        """A JSON-able dict of everything but the patches (which hold another run's arrays)."""
        return {"kernels": [{**asdict(c), "kernel": asdict(c.kernel)} for c in self.kernels],
                "ablations": [asdict(a) for a in self.ablations],
                "keep_only": asdict(self.keep_only) if self.keep_only else None,
                "edits": [{"type": _edit_type(e), **asdict(e)} for e in self.edits]}

    @staticmethod
    def from_json(d: dict) -> "Intervention":
        try:
            kernels = tuple(KernelChoice(Kernel(**c["kernel"]), None if c.get("layers") is None else tuple(c["layers"]),
                                         c.get("where", "self")) for c in d.get("kernels", ()))
            keep = d.get("keep_only")
            return Intervention(
                kernels=kernels, ablations=tuple(HeadAblation(**a) for a in d.get("ablations", ())),
                keep_only=None if not keep else KeepOnly(tuple(map(tuple, keep["heads"])), keep.get("mode", "zero"),
                                                         keep.get("where", "self")),
                edits=tuple(EDIT_TYPES[e["type"]](**{k: v for k, v in e.items() if k != "type"})
                            for e in d.get("edits", ())))
        except (KeyError, TypeError) as error:
            raise ExplorerError(f"intervention {str(d)[:60]!r} is malformed ({error})") from None


@dataclass(frozen=True)
class Experiment:
    """One entry of the app's Experiments list: an intervention and whether it is on (saved in sessions)."""

    intervention: Intervention
    on: bool = True

    def to_json(self) -> dict:
        return {"on": self.on, "intervention": self.intervention.to_json()}

    @staticmethod
    def from_json(d: dict) -> "Experiment":
        if not isinstance(d, dict) or "intervention" not in d:
            raise ExplorerError(f"experiment {str(d)[:60]!r} is malformed (no intervention)")
        return Experiment(Intervention.from_json(d["intervention"]), bool(d.get("on", True)))


def active(experiments) -> Intervention:
    """Everything the experiments that are on do, as one Intervention."""
    return combined(e.intervention for e in experiments if e.on)


def combined(interventions) -> Intervention:
    """One Intervention doing everything the given ones do (a later kernel choice wins a layer;
    the first "only these heads" is kept)."""
    interventions = list(interventions)
    keep = next((i.keep_only for i in interventions if i.keep_only is not None), None)
    return Intervention(kernels=sum((i.kernels for i in interventions), ()),
                        ablations=sum((i.ablations for i in interventions), ()), keep_only=keep,
                        edits=sum((i.edits for i in interventions), ()),
                        head_patches=sum((i.head_patches for i in interventions), ()),
                        residual_patches=sum((i.residual_patches for i in interventions), ()))


def describe(intervention: Intervention) -> str:
    """One line a person reads: "ablate L3.H5 (zero); relu in layers 2, 4; hide token 3 from L1-L2"."""
    parts = [f"ablate L{a.layer}.H{a.head} ({a.mode})" + ("" if a.where == "self" else f" [{a.where}]")
             for a in intervention.ablations]
    for choice in intervention.kernels:
        kernel = choice.kernel.name if choice.kernel.temperature == 1.0 else f"exp(S/{choice.kernel.temperature:g})"
        where = "every layer" if choice.layers is None else \
            ("layer " if len(choice.layers) == 1 else "layers ") + ", ".join(map(str, choice.layers))
        parts.append(f"{kernel} in {where}" + ("" if choice.where == "self" else f" [{choice.where}]"))
    if intervention.keep_only is not None:
        parts.append("only " + ", ".join(f"L{l}.H{h}" for l, h in intervention.keep_only.heads))
    for edit in intervention.edits:
        layers = f"L{edit.first_layer}-" + ("end" if edit.last_layer is None else f"L{edit.last_layer}")
        if isinstance(edit, HideEntry):
            parts.append(f"hide key {edit.key} from query {edit.query} in {layers}")
        elif isinstance(edit, HideToken):
            parts.append(f"hide token {edit.key} from {layers}")
        else:
            parts.append(f"hide offsets {edit.low}..{'' if edit.high is None else edit.high} in {layers}")
    parts += [f"patch L{p.layer}.H{p.head}" for p in intervention.head_patches]
    parts += [f"patch residual L{p.layer} @{p.position}" for p in intervention.residual_patches]
    return "; ".join(parts) or "nothing"


def _edit_type(edit) -> str:
    return next(name for name, kind in EDIT_TYPES.items() if isinstance(edit, kind))


NONE = Intervention()
