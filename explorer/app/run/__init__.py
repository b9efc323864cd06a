"""A run as the window drives it: what a press means (controller), the trace memory budget and its question,
the room left for one more step, and the progress of a long prefill."""
