"""What the app remembers between runs, kept in QSettings under named, typed keys.

Window geometry, the dock layout, recent models, the last export folder, the
theme, and the last model, device, dtype and sampling. Tests pass their own
QSettings (an .ini in a temporary folder) so they never touch the user's.
"""
from __future__ import annotations

import sys

from PySide6.QtCore import QByteArray, QRect, QSettings, QSize

from explorer.app.figures.figure_settings import FigureSettings
from explorer.app.run.trace_budget import DEFAULT_BUDGET, MAX_BUDGET_MB, MIN_BUDGET_MB
from explorer.app.thread.core_api import SamplingSettings

MAX_RECENT = 8
THEMES = ("system", "light", "dark")
KEPT_PROMPT_CHARS = 1 << 24    # 16 Mi characters, far past the text any supported context reads
PLACE_LIMIT = 16384         # px: no screen is larger; a saved place past it is not the window's


class AppSettings(FigureSettings):
    """Typed access to the app's QSettings: the exported figures' keys (FigureSettings) and the window's."""

    # ----- window ----------------------------------------------------------------
    def geometry(self) -> QByteArray | None:
        return self._bytes("window/geometry")

    def dock_state(self) -> QByteArray | None:
        return self._bytes("window/state")

    def save_window(self, geometry: QByteArray, state: QByteArray, size: QSize | None = None,
                    place: QRect | None = None, filled: bool = False) -> None:
        """The window's geometry and dock state, the size the docks were laid out for (Qt's
        restoreGeometry cuts a saved geometry to the screen, so it cannot tell that size again), where
        the window itself was (`place`, its own rectangle, frame not included), and whether it `filled` its
        screen's available area (it then fills the next screen too, larger or smaller)."""
        self.q.setValue("window/geometry", geometry)
        self.q.setValue("window/state", state)
        self.q.setValue("window/filled", "yes" if filled else "")
        if size is not None:
            self.q.setValue("window/size", f"{size.width()}x{size.height()}")
        if place is not None:
            self.q.setValue("window/place", ",".join(str(n) for n in place.getRect()))

    @property
    def window_filled(self) -> bool:
        """Whether the window filled its screen's available area at the last quit (save_window)."""
        return str(self.q.value("window/filled", "")) == "yes"

    def window_place(self) -> QRect | None:
        """Where the window itself was at the last quit (x, y, width, height, its frame not included); None if
        not saved (or unreadable). Qt's restoreGeometry cannot say it on a screen without a window manager: it
        keeps room above the window for a title bar it guesses, and the window came back 25 px down."""
        try:
            x, y, width, height = (int(n) for n in str(self.q.value("window/place", "")).split(","))
        except ValueError:
            return None
        sane = 0 < width <= PLACE_LIMIT and 0 < height <= PLACE_LIMIT and max(abs(x), abs(y)) <= PLACE_LIMIT
        return QRect(x, y, width, height) if sane else None      # a damaged file asks for no giant window

    def window_size(self) -> QSize | None:
        """The size the saved dock state was laid out for; None if not saved (or unreadable)."""
        try:
            width, height = (int(n) for n in str(self.q.value("window/size", "")).split("x"))
        except ValueError:
            return None
        return QSize(width, height)

    @property
    def theme(self) -> str:
        theme = str(self.q.value("view/theme", "system"))
        return theme if theme in THEMES else "system"

    @theme.setter
    def theme(self, theme: str) -> None:
        self.q.setValue("view/theme", theme if theme in THEMES else "system")

    @property
    def learn_seen(self) -> bool:
        """Whether the Learn path was opened on a first start already (it opens by itself only once)."""
        return str(self.q.value("learn/seen", "")) == "yes"

    @learn_seen.setter
    def learn_seen(self, seen: bool) -> None:
        self.q.setValue("learn/seen", "yes" if seen else "")

    @property
    def learn_open_at(self) -> int | None:
        """The Learn stop its dock showed at the last quit when it was open then, else None: a relaunch opens it
        again, where the saved layout had it."""
        try:
            return int(str(self.q.value("learn/open_at", "")))
        except ValueError:
            return None

    @learn_open_at.setter
    def learn_open_at(self, index: int | None) -> None:
        self.q.setValue("learn/open_at", "" if index is None else str(int(index)))

    # ----- models -----------------------------------------------------------------
    def recent_models(self) -> list[str]:
        value = self.q.value("models/recent", [])
        if isinstance(value, str):          # QSettings returns a lone string for a one-item list
            value = [value]
        return [str(v) for v in (value or []) if v]

    def remember_model(self, reference: str) -> None:
        recent = [reference] + [r for r in self.recent_models() if r != reference]
        self.q.setValue("models/recent", recent[:MAX_RECENT])
        self.q.setValue("models/last", reference)

    def accepted_terms(self, name: str) -> bool:
        return str(self.q.value(f"models/accepted_terms/{name}", "")) == "yes"

    def accept_terms(self, name: str) -> None:
        self.q.setValue(f"models/accepted_terms/{name}", "yes")

    def forget_model(self, reference: str) -> None:
        self.q.setValue("models/recent", [r for r in self.recent_models() if r != reference])

    @property
    def last_model(self) -> str | None:
        value = self.q.value("models/last", None)
        return str(value) if value else None

    @property
    def device(self) -> str:
        return str(self.q.value("models/device", "cpu"))

    @device.setter
    def device(self, device: str) -> None:
        self.q.setValue("models/device", device)

    @property
    def dtype(self) -> str:
        return str(self.q.value("models/dtype", "float32"))

    @dtype.setter
    def dtype(self, dtype: str) -> None:
        self.q.setValue("models/dtype", dtype)

    # ----- decoding and export --------------------------------------------------------
    @property
    def sampling(self) -> SamplingSettings:
        try:
            return SamplingSettings.from_dict({key: self.q.value(f"sampling/{key}")
                                               for key in ("temperature", "top_k", "top_p", "seed")
                                               if self.q.value(f"sampling/{key}") is not None})
        except (TypeError, ValueError):
            return SamplingSettings()

    @sampling.setter
    def sampling(self, sampling: SamplingSettings) -> None:
        for key, value in sampling.as_dict().items():
            self.q.setValue(f"sampling/{key}", value)

    @property
    def trace_budget(self) -> int:
        """The most bytes a recorded trace may take before the app asks (Decode ▸ Trace Memory Budget…)."""
        try:
            mb = int(self.q.value("decode/trace_budget_mb", DEFAULT_BUDGET // 10**6))
        except (TypeError, ValueError):
            mb = DEFAULT_BUDGET // 10**6
        return min(max(mb, MIN_BUDGET_MB), MAX_BUDGET_MB) * 10**6

    @trace_budget.setter
    def trace_budget(self, n_bytes: int) -> None:
        self.q.setValue("decode/trace_budget_mb", int(n_bytes // 10**6))

    @property
    def record_dtype(self) -> str:
        """The dtype the trace's arrays are recorded in (Decode ▸ Record the Trace in float16)."""
        value = str(self.q.value("decode/record_dtype", "float32"))
        return value if value in ("float32", "float16") else "float32"

    @record_dtype.setter
    def record_dtype(self, dtype: str) -> None:
        self.q.setValue("decode/record_dtype", dtype)

    @property
    def last_prompt(self) -> str:
        return str(self.q.value("prompt/last", "") or "")

    @last_prompt.setter
    def last_prompt(self, text: str) -> None:
        # Whole: cut at 100,000 characters, a 144,000-character prompt that fits Gemma's context came back cut
        # mid-word at the relaunch and was lost at the next quit (drive28). Only a text past any prompt a model
        # could read is cut, so that the settings file stays a settings file.
        self.q.setValue("prompt/last", text[:KEPT_PROMPT_CHARS])

    def sync(self) -> None:
        """Write the settings out; a file it cannot write (a folder without permission, a full disk) is said on
        stderr, the only place left at the window's close."""
        self.q.sync()
        if self.q.status() == QSettings.Status.AccessError:
            print(f"The settings could not be saved: {self.q.fileName()} cannot be written.", file=sys.stderr)

    def _bytes(self, key: str) -> QByteArray | None:
        value = self.q.value(key)
        return value if isinstance(value, QByteArray) and not value.isEmpty() else None
