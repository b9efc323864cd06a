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
- patch head outputs O_h (`HeadPatch`), the residual stream entering a block (`ResidualPatch`),
  what a sublayer adds to it (`SublayerPatch`), a head's Q, K or V as projected (`InputPatch`,
  read by the attention class before the core) or its pattern A_h (`PatternPatch`) with values
  from another run (activation patching); the parts live in intervention_parts.py.

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
from explorer.core.intervention_builder import Chaining
from explorer.core.intervention_parts import (  # noqa: F401 (the parts, named from here as well)
    ABLATION_MODES,
    EDIT_TYPES,
    HEAD_INPUTS,
    KERNELS,
    SOFTMAX,
    SUBLAYERS,
    WHERE,
    HeadAblation,
    HeadPatch,
    HideBand,
    HideEntry,
    HideToken,
    InputPatch,
    KeepOnly,
    Kernel,
    KernelChoice,
    PathPatch,
    PatternPatch,
    ResidualPatch,
    SublayerPatch,
    _layer_range,
    check_one_of,
)


@dataclass(frozen=True)
class LayerIntervention:
    """What one attention sublayer (`layer`, `where`) changes: its kernel, visibility, the heads' inputs,
    their patterns and their outputs."""

    kernel: Kernel = SOFTMAX
    edits: tuple = ()                                   # HideEntry | HideToken | HideBand
    ablated: tuple[tuple[int, str, tuple | None], ...] = ()   # (head, mode, positions or None: all)
    patches: tuple[HeadPatch, ...] = ()
    inputs: tuple[InputPatch, ...] = ()
    patterns: tuple[PatternPatch, ...] = ()
    senders: tuple[int, ...] = ()                       # heads whose O_h a path patch reads later
    paths: tuple[PathPatch, ...] = ()                   # paths received by this layer's heads

    @property
    def is_empty(self) -> bool:
        return self.kernel == SOFTMAX and not (self.edits or self.ablated or self.patches or self.inputs
                                               or self.patterns or self.senders or self.paths)

    @property
    def edited_heads(self) -> tuple[int, ...]:
        """The heads whose O_h is not A_h V_h of the recorded A and V (ablated or patched)."""
        return tuple(sorted({h for h, _, _ in self.ablated} | {p.head for p in self.patches}))

    def hidden(self, queries: np.ndarray, keys: np.ndarray) -> np.ndarray | None:
        """(T, n_kv) bool, True where an edit hides the entry; None when no edit applies."""
        if not self.edits:
            return None
        out = np.zeros((len(queries), len(keys)), dtype=bool)
        for edit in self.edits:
            out |= edit.hides(queries, keys)
        return out


@dataclass(frozen=True)
class Intervention(Chaining):
    """Every change to one run, as values. The empty Intervention changes nothing.

    Built by chaining (intervention_builder.Chaining): Intervention().ablate(3, 2).patch_head(...)."""

    kernels: tuple[KernelChoice, ...] = ()
    ablations: tuple[HeadAblation, ...] = ()
    keep_only: KeepOnly | None = None
    edits: tuple = ()                                   # HideEntry | HideToken | HideBand
    head_patches: tuple[HeadPatch, ...] = field(default=(), compare=False)
    residual_patches: tuple[ResidualPatch, ...] = field(default=(), compare=False)
    sublayer_patches: tuple[SublayerPatch, ...] = field(default=(), compare=False)
    input_patches: tuple[InputPatch, ...] = field(default=(), compare=False)
    pattern_patches: tuple[PatternPatch, ...] = field(default=(), compare=False)
    path_patches: tuple[PathPatch, ...] = field(default=(), compare=False)

    def __post_init__(self):
        for item in (*self.kernels, *self.ablations, *self.edits, *self.head_patches, *self.pattern_patches,
                     *([self.keep_only] if self.keep_only else [])):
            check_one_of("sublayer", item.where, WHERE)
        for mode in [a.mode for a in self.ablations] + ([self.keep_only.mode] if self.keep_only else []):
            check_one_of("ablation", mode, ABLATION_MODES)

    @property
    def patches(self) -> tuple:
        """Every patch, of every kind (they hold another run's arrays)."""
        return (*self.head_patches, *self.residual_patches, *self.sublayer_patches, *self.input_patches,
                *self.pattern_patches, *self.path_patches)

    @property
    def is_empty(self) -> bool:
        return not (self.kernels or self.ablations or self.keep_only or self.edits or self.patches)

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
        ablated = {a.head: (a.mode, a.positions) for a in self.ablations if a.layer == layer and a.where == where}
        if self.keep_only is not None and self.keep_only.where == where:
            kept = {h for l, h in self.keep_only.heads if l == layer}
            ablated.update({h: (self.keep_only.mode, None) for h in range(n_heads)
                            if h not in kept and h not in ablated})
        for head in ablated:
            if not 0 <= head < n_heads:
                raise ExplorerError(f"head {head} of layer {layer} does not exist: the layer has {n_heads} heads")
        site = LayerIntervention(
            kernel=self.kernel_of(layer, where),
            edits=tuple(e for e in self.edits if e.where == where and _layer_range(e.first_layer, e.last_layer, layer)),
            ablated=tuple((head, mode, positions) for head, (mode, positions) in sorted(ablated.items())),
            patches=tuple(p for p in self.head_patches if p.layer == layer and p.where == where),
            inputs=tuple(p for p in self.input_patches if p.layer == layer and where == "self"),
            patterns=tuple(p for p in self.pattern_patches if p.layer == layer and p.where == where),
            senders=tuple(sorted({p.sender_head for p in self.path_patches if p.sender_layer == layer}))
            if where == "self" else (),
            paths=tuple(p for p in self.path_patches if p.receiver_layer == layer and where == "self"))
        return None if site.is_empty else site

    def residual_patches_at(self, layer: int) -> tuple[ResidualPatch, ...]:
        return tuple(p for p in self.residual_patches if p.layer == layer)

    def sublayer_patches_at(self, layer: int, which: str) -> tuple[SublayerPatch, ...]:
        return tuple(p for p in self.sublayer_patches if p.layer == layer and p.which == which)

    def check(self, n_layers: int, n_heads: int) -> None:
        """Raise ExplorerError when an entry names a layer or head the model does not have."""
        layers = [a.layer for a in self.ablations] + [p.layer for p in self.patches if hasattr(p, "layer")] + \
            [p.receiver_layer for p in self.path_patches] + \
            [l for choice in self.kernels for l in (choice.layers or ())] + \
            [l for l, _ in (self.keep_only.heads if self.keep_only else ())]
        for layer in layers:
            if not 0 <= layer < n_layers:
                raise ExplorerError(
                    f"layer {layer} does not exist: the model has {n_layers} layers (0..{n_layers - 1})")
        heads = [(a.layer, a.head) for a in self.ablations] + list(self.keep_only.heads if self.keep_only else ()) + \
            [(p.layer, p.head) for p in (*self.head_patches, *self.pattern_patches)] + \
            [(p.layer, p.head) for p in self.input_patches if p.which == "q"] + \
            [(p.sender_layer, p.sender_head) for p in self.path_patches]
        for layer, head in heads:
            if not 0 <= head < n_heads:
                raise ExplorerError(f"head {head} of layer {layer} does not exist: layers have {n_heads} heads")

    # ----- the session file ---------------------------------------------------------------
    def to_json(self) -> dict:
        """A JSON-able dict of everything but the patches (which hold another run's arrays)."""
        return {"kernels": [{**asdict(c), "kernel": asdict(c.kernel)} for c in self.kernels],
                "ablations": [_ablation_json(a) for a in self.ablations],
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
                        **{name: sum((getattr(i, name) for i in interventions), ()) for name in PATCH_FIELDS})


def describe(intervention: Intervention) -> str:
    """One line a person reads: "ablate L3.H5 (zero); relu in layers 2, 4; hide token 3 from L1-L2"."""
    parts = [f"ablate L{a.layer}.H{a.head} ({a.mode})" + ("" if a.where == "self" else f" [{a.where}]") +
             ("" if a.positions is None else " at " + ", ".join(map(str, a.positions))) for a in intervention.ablations]
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
    parts += [f"patch {p.which} L{p.layer}" for p in intervention.sublayer_patches]
    parts += [f"patch {p.which} L{p.layer}.H{p.head}" for p in intervention.input_patches]
    parts += [f"patch pattern L{p.layer}.H{p.head}" for p in intervention.pattern_patches]
    parts += [f"path L{p.sender_layer}.H{p.sender_head} -> L{p.receiver_layer}.H{p.receiver_head} {p.which}"
              for p in intervention.path_patches]
    return "; ".join(parts) or "nothing"


def _ablation_json(ablation: HeadAblation) -> dict:
    """An ablation's fields; `positions` only where it names some (files of the whole-head kind stay as they were)."""
    fields = asdict(ablation)
    if fields["positions"] is None:
        del fields["positions"]
    else:
        fields["positions"] = list(fields["positions"])
    return fields


PATCH_FIELDS = ("head_patches", "residual_patches", "sublayer_patches", "input_patches", "pattern_patches",
                "path_patches")


def _edit_type(edit) -> str:
    return next(name for name, kind in EDIT_TYPES.items() if isinstance(edit, kind))


NONE = Intervention()
