"""Whether the trace on screen is still the prompt's: after the prompt is edited or emptied it is not.

Every panel says so (explorer.app.panels.base.Panel.view_state) rather than show an old prompt's
attention as if it were the new one's.
"""
from __future__ import annotations

import numpy as np

from explorer.views import trace_views

EMPTY = "the prompt is empty; this is the last prompt that ran."
EDITED = "the prompt was edited; press Run (Ctrl+Enter) to see it."


def started_from(started: np.ndarray, prompt: np.ndarray) -> bool:
    """Whether a trace started from `started` ids ran `prompt`: its tail where a long prompt was cut, or the
    prompt with a task token around it (an encoder-decoder's source)."""
    if len(started) <= len(prompt):
        return bool(np.array_equal(prompt[len(prompt) - len(started):], started))
    return any(np.array_equal(started[i:i + len(prompt)], prompt) for i in range(len(started) - len(prompt) + 1))


def out_of_date(trace, prompt_ids: np.ndarray | None, shown_prompt: np.ndarray | None) -> str | None:
    """Why `trace` is no longer the prompt's (one sentence), or None while it is (or there is no trace).

    `shown_prompt` is the uncut prompt the trace ran, where the controller knows it."""
    if trace is None or not trace.steps or prompt_ids is None:
        return None
    if len(prompt_ids) == 0:
        return EMPTY
    if shown_prompt is not None:
        same = np.array_equal(shown_prompt, prompt_ids)
    else:
        same = started_from(trace_views.started_ids(trace), prompt_ids)
    return None if same else EDITED
