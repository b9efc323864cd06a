"""The panels, one module each. Each is `XxxPanel(session)`, has a `title` and `export_actions()`.

`ALL_PANELS` lists (object_name, title, class) in display order, for the main
window's dock widgets.
"""
from __future__ import annotations

from explorer.app.panels.attention import AttentionPanel
from explorer.app.panels.embeddings import EmbeddingsPanel
from explorer.app.panels.kv_cache import KVCachePanel
from explorer.app.panels.kv_lab import KVLabPanel
from explorer.app.panels.mask import MaskPanel
from explorer.app.panels.model_map import ModelMapPanel
from explorer.app.panels.next_token import NextTokenPanel
from explorer.app.panels.qkv import QKVPanel
from explorer.app.panels.tokens import TokensPanel

ALL_PANELS = [(cls.object_name, cls.title, cls) for cls in (
    TokensPanel, EmbeddingsPanel, QKVPanel, AttentionPanel, MaskPanel, KVCachePanel, KVLabPanel, NextTokenPanel,
    ModelMapPanel)]

__all__ = ["ALL_PANELS", "AttentionPanel", "EmbeddingsPanel", "KVCachePanel", "KVLabPanel", "MaskPanel",
           "ModelMapPanel", "NextTokenPanel", "QKVPanel", "TokensPanel"]
