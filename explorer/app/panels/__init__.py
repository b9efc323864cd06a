"""The panels, one module each. Each is `XxxPanel(session)`, has a `title` and `export_actions()`.

`registry.PANELS` lists them in display order, each with its dock area and tooltip, for the main window.
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

__all__ = ["AttentionPanel", "EmbeddingsPanel", "KVCachePanel", "KVLabPanel", "MaskPanel",
           "ModelMapPanel", "NextTokenPanel", "QKVPanel", "TokensPanel"]
