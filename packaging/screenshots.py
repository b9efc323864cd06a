"""Screenshots of the real app in a real X window, for the README: `make screenshots`.

Starts its own Xvfb (Debian package `xvfb`) at each screen size people have, runs
`python -m explorer --screenshots` with QT_QPA_PLATFORM=xcb, and writes into docs/screenshots/:
  1366x768/, 1920x1080/             the window in its default layout on that screen, once per
                                    bottom tab (tab_<name>.png) and as it opens (window.png)
  window.png, panel_<name>.png      SmolLM2-135M from the model store (else a bundled model),
                                    its prompt typed in, prefill + 3 steps, on the 1920x1080 screen
  cross_attention.png               the EN->ZH encoder-decoder's cross-attention (when bundled)
  gemma3_mask.png, gemma3_attention.png
                                    Gemma 3's sliding-window layers (when pulled); only pictures
                                    of the Gemma file are written, nothing from it is copied.
Usage: python packaging/screenshots.py [--out DIR] [--model NAME_OR_PATH] [--only-main] [--screens 1366x768,...]
Exits 0 with a message, and writes nothing, where Xvfb is not installed.
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCREENS = ("1366x768", "1920x1080")      # the last one also takes the README's pictures
TIMEOUT_S = 900
# A prompt longer than Gemma 3's 512-token window, so its local layers show the band.
GEMMA_PROMPT = " ".join(["The quick brown fox jumps over the lazy dog near the river bank."] * 48)


def start_xvfb(screen: str) -> tuple[subprocess.Popen, str]:
    """Start Xvfb with a WIDTHxHEIGHT screen on a free display it chooses itself; return the process and ':N'."""
    read, write = os.pipe()
    process = subprocess.Popen(["Xvfb", "-displayfd", str(write), "-screen", "0", f"{screen}x24", "-nolisten", "tcp"],
                               pass_fds=(write,), stderr=subprocess.DEVNULL)
    os.close(write)
    with os.fdopen(read) as pipe:
        number = pipe.readline().strip()
    if not number:
        process.kill()
        raise SystemExit("screenshots: Xvfb did not start")
    return process, f":{number}"


def run_app(display: str, out: Path, model: str | None, prompt: str | None = None) -> None:
    command = [sys.executable, "-m", "explorer", "--no-restore", "--screenshots", str(out)]
    command += ["--model", model] if model else []
    command += ["--prompt", prompt] if prompt else []
    env = dict(os.environ, DISPLAY=display, QT_QPA_PLATFORM="xcb", TRANSFORMER_EXPLORER_NO_RESTORE="1")
    env.pop("WAYLAND_DISPLAY", None)
    print("running:", " ".join(command[:6]), "…", flush=True)
    result = subprocess.run(command, env=env, cwd=ROOT, timeout=TIMEOUT_S, stdout=subprocess.PIPE, text=True)
    written = [Path(line) for line in result.stdout.splitlines() if line.endswith(".png")]
    print(result.stdout, end="")
    # The app lists its pictures once all are written; a failure before that lists none.
    if result.returncode != 0 and not (written and all(path.exists() for path in written)):
        raise subprocess.CalledProcessError(result.returncode, command)
    if result.returncode != 0:
        print(f"warning: the app exited with status {result.returncode} after writing its pictures", file=sys.stderr)


def extra_shots(display: str, out: Path) -> None:
    """The encoder-decoder's cross-attention and Gemma 3's sliding-window mask, where those models exist."""
    translate = ROOT / "resources" / "models" / "translate-en-zh"
    store = Path(os.environ.get("TRANSFORMER_EXPLORER_HOME", Path.home() / ".cache/transformer-explorer/models"))
    gemma = store / "gemma3-270m"
    for present, model, prompt, picks in (
            (translate.exists(), str(translate), "November 23, 1987", {"panel_attention.png": "cross_attention.png"}),
            (gemma.exists(), "gemma3-270m", GEMMA_PROMPT,
             {"panel_mask.png": "gemma3_mask.png", "panel_attention.png": "gemma3_attention.png"})):
        if not present:
            print(f"skipped {Path(model).name}: not found")
            continue
        with tempfile.TemporaryDirectory() as scratch:
            run_app(display, Path(scratch), model, prompt)
            for source, target in picks.items():
                shutil.copyfile(Path(scratch) / source, out / target)


def shots_on_screen(display: str, out: Path, screen: str, model: str | None, readme: bool) -> None:
    """The window and each tab on this screen into out/<screen>/; with `readme`, the README's pictures too."""
    folder = out / screen
    folder.mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory() as scratch:
        run_app(display, Path(scratch), model)
        for picture in Path(scratch).glob("*.png"):
            if picture.name == "window.png" or picture.name.startswith("tab_"):
                shutil.copyfile(picture, folder / picture.name)
            if readme and not picture.name.startswith("tab_"):
                shutil.copyfile(picture, out / picture.name)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(ROOT / "docs" / "screenshots"))
    parser.add_argument("--model", help="the model of the main screenshots (default: the app's default model)")
    parser.add_argument("--only-main", action="store_true", help="skip the encoder-decoder and Gemma 3 shots")
    parser.add_argument("--screens", default=",".join(SCREENS),
                        help="screen sizes, comma-separated; the last one takes the README's pictures")
    args = parser.parse_args(argv)
    if shutil.which("Xvfb") is None:
        print("screenshots skipped: Xvfb is not installed (Debian: sudo apt-get install xvfb).")
        return 0
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    screens = args.screens.split(",")
    for screen in screens:
        xvfb, display = start_xvfb(screen)
        try:
            readme = screen == screens[-1]
            shots_on_screen(display, out, screen, args.model, readme)
            if readme and not args.only_main:
                extra_shots(display, out)
        except subprocess.CalledProcessError as error:
            print(f"screenshots failed: the app exited with status {error.returncode}", file=sys.stderr)
            return 1
        finally:
            xvfb.terminate()
            xvfb.wait(10)
    print(f"screenshots written to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
