"""The model thread: the worker (the GUI's handle), its loop, the requests it takes and the one door into the
core (core_api). Only core_api, decode_loop and preload reach torch-side core."""
