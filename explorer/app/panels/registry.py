"""The one list of the window's panels, in display order: each one's class, its dock area and the one
sentence its dock's title bar and tab say. Adding a panel is its module and one row here; the window, its
menus, the default layout, the tooltips, the tests and the import contract (tests/app/test_panel_registry.py)
all read this list.
"""
from __future__ import annotations

from dataclasses import dataclass

from explorer.app.panels.atlas import AtlasPanel
from explorer.app.panels.attention import AttentionPanel
from explorer.app.panels.attribution import AttributionPanel
from explorer.app.panels.derivation import DerivationPanel
from explorer.app.panels.embeddings import EmbeddingsPanel
from explorer.app.panels.experiments import ExperimentsPanel
from explorer.app.panels.kv_cache import KVCachePanel
from explorer.app.panels.kv_lab import KVLabPanel
from explorer.app.panels.mask import MaskPanel
from explorer.app.panels.model_map import ModelMapPanel
from explorer.app.panels.next_token import NextTokenPanel
from explorer.app.panels.qkv import QKVPanel
from explorer.app.panels.residual import ResidualPanel
from explorer.app.panels.tokens import TokensPanel


@dataclass(frozen=True)
class PanelSpec:
    cls: type                # the panel: XxxPanel(session), with its object_name and title
    area: str                # its default dock area: "left", "right" or "bottom" (tabbed), see dock_layout
    tip: str                 # what it shows, one sentence: its dock's title bar and tab tooltip

    @property
    def object_name(self) -> str:
        return self.cls.object_name

    @property
    def title(self) -> str:
        return self.cls.title


PANELS = (
    PanelSpec(TokensPanel, "left",
              "The prompt cut into the model's tokens, with each token's id; click one to select it."),
    PanelSpec(EmbeddingsPanel, "bottom",
              "The embedding rows E[id] the tokens start from, their norms, and the position each adds."),
    PanelSpec(QKVPanel, "bottom",
              "The query, key and value vectors Q = X W^Q, K = X W^K, V = X W^V of the selected head."),
    PanelSpec(AttentionPanel, "right",
              "The attention weights A = softmax(Q K^T / √d) of the selected head, and every head as a grid."),
    PanelSpec(MaskPanel, "bottom", "Which keys each query may attend to, step by step and layer by layer."),
    PanelSpec(KVCachePanel, "bottom",
              "What the model's KV cache holds after each step, block by block, and the bytes it takes."),
    PanelSpec(KVLabPanel, "bottom",
              "The bytes MHA, GQA, MQA and MLA would cache for this model, and what converting it costs."),
    PanelSpec(NextTokenPanel, "left",
              "The next-token probabilities softmax(h W_U), most likely first; click one to force it."),
    PanelSpec(ModelMapPanel, "bottom",
              "The loaded model's computation drawn as a diagram, with the part in view lit."),
    PanelSpec(DerivationPanel, "bottom",
              "One attention weight A[i, j], derived step by step from the numbers the model recorded."),
    PanelSpec(AttributionPanel, "bottom", "How much each head and layer adds to the chosen next token's logit."),
    PanelSpec(ResidualPanel, "bottom",
              "What each layer adds to the residual stream at the selected position, read by the logit lens."),
    PanelSpec(AtlasPanel, "bottom", "What every head does (previous token, induction, sink), as layer × head maps."),
    PanelSpec(ExperimentsPanel, "bottom",
              "Ablate heads, swap the attention kernel or hide tokens, and see the next token move."),
)


def spec(object_name: str) -> PanelSpec | None:
    """The row of the panel of that object name, or None (the prompt, Learn)."""
    return next((row for row in PANELS if row.object_name == object_name), None)
