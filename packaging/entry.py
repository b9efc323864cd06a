"""Entry point of the bundled app (PyInstaller cannot start from `python -m`)."""
import sys

from explorer.cli import main

sys.exit(main())
