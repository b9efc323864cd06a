"""The window's exports: the dialogs that ask for a figure's file and size, and the animations of decoding (the
figures and the files themselves are explorer.drawing's)."""
