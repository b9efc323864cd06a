"""The bundle's spec carries every CLI command: its hidden imports are the CLI's own command table, and each
of those modules exists (a hand-kept list missed patch, attribute and heads, and the bundle's self-test
failed with ModuleNotFoundError); and it names the MP4 encoder's modules, whose package carries the ffmpeg
binary the bundle copies."""
import importlib.util
from pathlib import Path

from explorer import cli

SPEC = Path(__file__).resolve().parents[1] / "packaging" / "transformer-explorer.spec"


def spec_arguments() -> dict:
    """Run the spec as PyInstaller does, with its build steps recording what they are given."""
    seen = {}

    def step(name):
        def record(*args, **kwargs):
            seen[name] = kwargs
            return type(name, (), {"pure": [], "scripts": [], "binaries": [], "datas": []})()
        return record

    namespace = {"SPECPATH": str(SPEC.parent), **{name: step(name) for name in ("Analysis", "PYZ", "EXE", "COLLECT")}}
    exec(compile(SPEC.read_text(), str(SPEC), "exec"), namespace)
    return seen


def test_the_spec_bundles_every_command_of_the_cli():
    hidden = [name for name in spec_arguments()["Analysis"]["hiddenimports"] if name.startswith("explorer.")]
    parser_commands = set(cli.build_parser()._subparsers._group_actions[0].choices)
    assert sorted(hidden) == sorted(f"explorer.tools.{name}_cmd" for name in parser_commands)
    assert {"explorer.tools.patch_cmd", "explorer.tools.attribute_cmd", "explorer.tools.heads_cmd"} <= set(hidden)
    for module in hidden:
        assert importlib.util.find_spec(module) is not None, module


def test_the_spec_carries_the_mp4_encoder_and_its_binary():
    import imageio_ffmpeg

    hidden = spec_arguments()["Analysis"]["hiddenimports"]
    assert {"imageio.plugins.ffmpeg", "imageio_ffmpeg"} <= set(hidden)
    binaries = Path(imageio_ffmpeg.__file__).parent / "binaries"
    exe = Path(imageio_ffmpeg.get_ffmpeg_exe())
    assert exe.parent == binaries and exe.is_file(), exe       # the wheel's own, which the hook collects
