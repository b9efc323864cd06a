"""The "Why this token" panels, listed for the main window as (object_name, title, class)."""
from __future__ import annotations

from explorer.app.panels.atlas import AtlasPanel
from explorer.app.panels.attribution import AttributionPanel
from explorer.app.panels.derivation import DerivationPanel
from explorer.app.panels.residual import ResidualPanel

WHY_PANELS = [(cls.object_name, cls.title, cls) for cls in (DerivationPanel, AttributionPanel, ResidualPanel,
                                                            AtlasPanel)]
