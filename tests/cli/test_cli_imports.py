"""The app's start must not wait for torch: building the command-line parser imports no torch."""
import subprocess
import sys


def test_building_the_parser_does_not_import_torch():
    code = "import sys, explorer.cli; explorer.cli.build_parser(); print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.strip() == "False"
