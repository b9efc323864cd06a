"""Opening a model: a load asked, cancelled, failed or done, and what a press made meanwhile waits for.

A press made while a model loads waits for it; once it is ready the prompt runs on its own, unless it is
long (a relaunch must not start minutes of work unasked). DecodingController takes these from here.
"""
from __future__ import annotations

from typing import Callable

from explorer.app.thread.core_api import LoadedSummary
from explorer.views.words import plural

# A prompt longer than this is not run on its own after a model opens (a relaunch, a switch): its text
# stays in the editor and Run runs it. A few hundred tokens run in well under a second on a CPU.
AUTO_RUN_TOKENS = 512


class ModelLoading:
    """The model's loading, for DecodingController (a mixin: it reads the controller's session, worker,
    prompt and signals)."""

    def load(self, reference: str, device: str = "cpu", dtype: str = "float32",
             then: Callable[[], None] | None = None) -> None:
        """Load a model (catalog name or path); `then` runs once it is ready (default: run the prompt)."""
        self.set_playing(False)
        self.loading = reference
        self._after_load = then
        self.loading_changed.emit(True)
        self.worker.load(reference, device, dtype)

    def cancel_load(self) -> None:
        if self.loading is not None:
            self.worker.cancel()
            self._give_back_dropped()
            self._end_loading()
            if self.worker.holds_unwanted:      # a load cancelled earlier had switched the model thread already
                self._drop_unwanted_model()
            else:
                self.notice.emit("Loading cancelled; the previous model is still in use.")

    def _on_model_loaded_late(self, summary: LoadedSummary) -> None:
        """The model thread switched to `summary`'s model just before a Cancel (or another load) reached it. The
        cancel wins: the model is not taken. The one before is gone from the model thread, so unless a newer
        load is awaited (its end decides), no model is open, and every panel says so."""
        if self.loading is None:
            self._drop_unwanted_model(summary.name)

    def _drop_unwanted_model(self, name: str = "the model") -> None:
        """Let the model thread go of a model nobody awaits, and name no model anywhere (close_model's path)."""
        self.close_model()
        self.notice.emit(f"Loading cancelled as {name} became ready; the model before was let go already, so "
                         "no model is open: choose one in the Model box or File ▸ Open.")

    def close_model(self) -> None:
        """File ▸ Close Model: stop the model's work (a load too), let the model thread release it, and show
        no model: the session's one path (set_trace, set_model) gives every panel its empty "no model" state."""
        self.set_playing(False)
        if self.loading is not None:
            self._end_loading()
        self.worker.cancel(discard_traces=True)
        self.worker.unload()
        self.summary = None
        self._run_prompt = self._awaited = self._shown_prompt = None
        self._lost_trace, self._giving_back = None, False
        self.session.set_token_display(None)
        self.session.set_token_bytes(None)
        self.session.set_text_decoder(None)
        self.session.set_tokens(None)
        self.session.set_trace(None)
        self.session.set_model(None)
        self._update_out_of_date()
        self.model_changed.emit(None)

    @property
    def reference(self) -> str | None:
        return self.summary.reference if self.summary is not None else None

    def _on_model_loaded(self, summary: LoadedSummary) -> None:
        self.summary = summary
        if summary.tokenizer is not None:
            tokenizer = summary.tokenizer
            self.session.set_token_display(tokenizer.display)
            self.session.set_token_bytes(tokenizer.token_bytes)
            self.session.set_text_decoder(lambda ids: tokenizer.decode([i for i in ids if not tokenizer.is_special(i)]))
        self._lost_trace, self._giving_back = None, False
        self.session.set_trace(None)
        self.session.set_model(summary.info)
        self.session.set_not_run(None)          # why the model before ran nothing; this one's run says anew
        self._tokenize()
        self._update_out_of_date()
        self.model_changed.emit(summary)
        action = self._after_load
        self._end_loading()
        self.model_ready.emit(summary)
        if action is not None:
            action()
        elif self.prompt:
            self._run_if_short()

    def _run_if_short(self) -> None:
        """Run the prompt once a model opens, unless it is long: then its text waits for Run, and the
        panels say why nothing is shown (a relaunch must not start minutes of work unasked)."""
        ids = self.prompt_ids()
        if ids is not None and len(ids) > AUTO_RUN_TOKENS:
            reason = (f"The prompt has {plural(len(ids), 'token')}, too many to run on its own when a model "
                      "opens: press Run (Ctrl+Enter) to run it.")
            self._not_run(reason)
            return
        self.run(announce=False)

    def _on_load_failed(self, reference: str) -> None:
        self._give_back_dropped()               # the load pushed dropped it from the queue
        if reference == self.loading:
            self._end_loading()
            self.load_failed.emit(reference)
            if self.worker.holds_unwanted:      # the model before went for a load cancelled too late
                self._drop_unwanted_model()

    def _deferred(self, action: Callable[[], None]) -> bool:
        """While a model loads, remember the press and do it once the model is ready."""
        if self.loading is None:
            if self.summary is None:            # a status line, never a modal box (the presses are off then)
                self.notice.emit("No model is open yet; choose one in the Model box or File ▸ Open.")
                return True
            return False
        self._after_load = action
        return True

    def _end_loading(self) -> None:
        self.loading = None
        self._after_load = None
        self.loading_changed.emit(False)
