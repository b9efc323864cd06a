#!/usr/bin/env bash
# Build the one-folder bundle with PyInstaller, then smoke-test it with --self-test.
set -euo pipefail
cd "$(dirname "$0")/.."
.venv/bin/pip install -q -c constraints.txt pyinstaller
.venv/bin/pyinstaller --noconfirm --clean --distpath dist --workpath build/pyinstaller \
  packaging/transformer-explorer.spec
bundle=dist/transformer-explorer
QT_QPA_PLATFORM=offscreen "$bundle/transformer-explorer" --self-test
echo "bundle: $bundle ($(du -sh "$bundle" | cut -f1)), self-test passed"
