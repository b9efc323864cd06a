"""Text this machine's fonts can draw: a vocabulary token in a script that no installed font shapes is named by
its code points, never handed to Qt.

Qt shapes some scripts only with a font's OpenType tables (qfontdatabase.cpp, `scriptRequiresOpenType`: Syriac to
Sinhala, Khmer, N'Ko). Asked to lay out such text with no font for its script, it draws empty boxes, and prints
"qt.text.font.db: OpenType support missing for <family>, script N" on stderr for every family it tries. Gemma 3's
vocabulary holds Telugu and Devanagari pieces that its logit lens ranks high at early layers, so opening it on a
machine without those fonts filled stderr with warnings, and the Residual panel with boxes a person could not read.
"""
from __future__ import annotations

import re
from functools import cache

from PySide6.QtGui import QFontDatabase, QGuiApplication

_WS = QFontDatabase.WritingSystem

# (first, last code point, the writing system a font declares for them, the script's name): the Unicode blocks
# of the scripts Qt shapes only through OpenType.
SHAPED_SCRIPTS = (
    (0x0700, 0x074F, _WS.Syriac, "Syriac"), (0x0860, 0x086F, _WS.Syriac, "Syriac"),
    (0x0780, 0x07BF, _WS.Thaana, "Thaana"), (0x07C0, 0x07FF, _WS.Nko, "N'Ko"),
    (0x0900, 0x097F, _WS.Devanagari, "Devanagari"), (0xA8E0, 0xA8FF, _WS.Devanagari, "Devanagari"),
    (0x0980, 0x09FF, _WS.Bengali, "Bengali"), (0x0A00, 0x0A7F, _WS.Gurmukhi, "Gurmukhi"),
    (0x0A80, 0x0AFF, _WS.Gujarati, "Gujarati"), (0x0B00, 0x0B7F, _WS.Oriya, "Oriya"),
    (0x0B80, 0x0BFF, _WS.Tamil, "Tamil"), (0x0C00, 0x0C7F, _WS.Telugu, "Telugu"),
    (0x0C80, 0x0CFF, _WS.Kannada, "Kannada"), (0x0D00, 0x0D7F, _WS.Malayalam, "Malayalam"),
    (0x0D80, 0x0DFF, _WS.Sinhala, "Sinhala"), (0x1780, 0x17FF, _WS.Khmer, "Khmer"),
    (0x19E0, 0x19FF, _WS.Khmer, "Khmer"),
)


@cache
def _unshaped() -> tuple[re.Pattern | None, dict[int, str]]:
    """A pattern matching runs of characters whose script no installed font declares (None: every script is
    covered), and each such block's first code point -> the script's name. Read once: fonts seldom come and go
    while the app runs, and the database's answer takes milliseconds."""
    missing = [(first, last, name) for first, last, system, name in SHAPED_SCRIPTS
               if not QFontDatabase.families(system)]
    if not missing:
        return None, {}
    blocks = "".join(f"\\u{first:04x}-\\u{last:04x}" for first, last, _ in missing)
    return re.compile(f"[{blocks}]+"), {first: name for first, _, name in missing}


def script_name(char: str, names: dict[int, str]) -> str:
    """The name of the script block holding `char` (one of those `names` lists)."""
    code = ord(char)
    return next(name for first, last, _, name in SHAPED_SCRIPTS if first <= code <= last and first in names)


def drawable(text: str) -> str:
    """`text` with each run of characters no installed font can shape named instead: 'పంచ' reads
    '⟨Telugu U+0C2A U+0C02 U+0C1A⟩' on a machine without a Telugu font, and stays 'పంచ' where one is installed.
    Before a QGuiApplication exists the fonts are unknown, and the text is left as it is."""
    if not isinstance(QGuiApplication.instance(), QGuiApplication):
        return text
    pattern, names = _unshaped()
    if pattern is None or pattern.search(text) is None:
        return text

    def named(match: re.Match) -> str:
        run = match.group(0)
        return f"⟨{script_name(run[0], names)} " + " ".join(f"U+{ord(c):04X}" for c in run) + "⟩"

    return pattern.sub(named, text)
