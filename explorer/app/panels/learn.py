"""Learn: a path through the model, in the order of the seed texts, one idea per stop.

Each stop (resources/learn/stops.json) has a short text in the panels' notation (X, E, W^Q, A,
A = Z⁻¹ f_κ(S), d_QK, N_Q, N_KV), its formula in the header, one "Show me" button that puts the window in
the state that shows it (model, prompt, steps, panel, layer and head, kernel: learn_tour.Tour),
and one or two questions to try there. Back and Next only turn the page: the person's own
prompt and model stay until Show me is pressed, and "Back to my session" puts them back.
The window places it (explorer.app.window.learn_placement): from Help ▸ Learn, as a dock beside the panels it
talks about; from the "?" on the title of a panel a stop names, at that stop; and on the first start.
"""
from __future__ import annotations

import html
import re

from PySide6.QtCore import QEvent, Qt, QTimer
from PySide6.QtWidgets import QHBoxLayout, QLabel, QPushButton, QTextBrowser

from explorer.app.panels.base import Drawn, Panel, formula_html
from explorer.app.state.session import NO_MODEL
from explorer.app.widgets.learn_tour import Stop, Tour, load_stops
from explorer.app.widgets.scripted_combo import ScriptedComboBox
from explorer.views import try_answers

NO_MODEL_SAID = "No model is open: Show me opens the one this stop needs."


class LearnPanel(Panel):
    title = "Learn"
    object_name = "learn"
    needs_trace = False
    needs_model = False          # the tour opens its own model; with none open (Close Model) it still starts

    def __init__(self, session, parent=None, stops: tuple[Stop, ...] | None = None) -> None:
        super().__init__(session, parent)
        self.stops = stops if stops is not None else load_stops()
        self.index = 0
        self.answers: dict[int, str] = {}      # this stop's questions answered so far: shown under each question
        self.tour: Tour | None = None
        self.chooser = ScriptedComboBox()           # W^Q drawn with a raised Q, as in the page's heading
        for i, s in enumerate(self.stops):
            self.chooser.add_item(f"{i + 1}. {plain(s.title)}", f"{i + 1}. {formula_html(s.title)}")
        self.chooser.currentIndexChanged.connect(self.go_to)
        self.text = QTextBrowser()
        self.text.setOpenLinks(False)
        self.text.anchorClicked.connect(self._on_link)
        self.status = QLabel(" ")
        self.status.setWordWrap(True)
        self.status.setTextFormat(Qt.TextFormat.RichText)     # a stop's title draws d_QK, W^O with scripts
        self.back_button, self.show_button, self.next_button = (QPushButton(t) for t in ("◀ Back", "Show me", "Next ▶"))
        self.show_button.setToolTip("open the model, prompt, panel, layer and head this stop talks about")
        self.own_button = QPushButton("Back to my session")
        self.own_button.setToolTip("your own session as it was before Show me: model, prompt, decoded tokens, "
                                   "selection and experiments")
        self.own_button.setEnabled(False)
        self.back_button.clicked.connect(lambda: self.go_to(self.index - 1))
        self.next_button.clicked.connect(lambda: self.go_to(self.index + 1))
        self.show_button.clicked.connect(self.show_me)
        self.own_button.clicked.connect(self.back_to_own_session)
        buttons = QHBoxLayout()
        for button in (self.back_button, self.show_button, self.next_button):
            buttons.addWidget(button)
        self.body.addWidget(self.chooser)
        self.body.addWidget(self.text, 1)
        # The status line over the buttons, the page giving it its lines: under them, "Shown: <title>. …" wrapped
        # to one line at one stop and two at the next, and Back and Next moved 14 px under the pointer.
        self.body.addWidget(self.status)
        self.body.addLayout(buttons)
        self.body.addWidget(self.own_button)
        self.go_to(0)
        session.model_changed.connect(self._on_model_changed)
        self._on_model_changed(session.model)      # made after a Close Model, or beside a model open already

    # ----- the contract: the path is always there to read ------------------------------------------
    def drawn(self):
        return Drawn("trace", getattr(self.session, "model_id", None), self.session.trace_id)

    def view_state(self) -> tuple[str, object]:
        return "trace", self.session.trace_id

    def _on_model_changed(self, model) -> None:
        """The status line follows the model at every switch, close and failed load: none open says so, and a
        model opened replaces what was said of the one before (it kept "No model is open" after a model was
        opened again). A model the tour is opening is left to the tour's own progress lines."""
        if model is None and self.session.not_run == NO_MODEL:
            self.say(NO_MODEL_SAID)
        elif model is not None and not (self.tour is not None and self.tour.busy):
            self.say(f"{model.name} is open: Show me opens what this stop shows.")

    def say(self, text: str) -> None:
        """A plain sentence in the status line (rich text only for a stop's formula-bearing title)."""
        self.status.setText(html.escape(text, quote=False))

    # ----- pages ----------------------------------------------------------------------------------
    @property
    def stop(self) -> Stop:
        return self.stops[self.index]

    def go_to(self, index: int) -> None:
        """Turn to stop `index` (only the page: the window's state is left as it is)."""
        self.index = min(max(int(index), 0), len(self.stops) - 1)
        stop = self.stop
        if self.chooser.currentIndex() != self.index:
            self.chooser.setCurrentIndex(self.index)
        self.set_formula(stop.formula)
        self.answers = {}
        self.text.setHtml(page_html(stop, self.index, len(self.stops)))
        self.back_button.setEnabled(self.index > 0)
        self.next_button.setEnabled(self.index < len(self.stops) - 1)

    # ----- Show me --------------------------------------------------------------------------------
    def ensure_tour(self) -> Tour | None:
        """The driver of the window this panel is docked in (None outside a main window)."""
        window = self.window()
        if self.tour is None and hasattr(window, "controller"):
            self.tour = Tour(window, self)
            self.tour.reached.connect(self._on_reached)
            self.tour.failed.connect(self._on_failed)
            self.tour.progress.connect(lambda text: self.say(text or " "))
        return self.tour

    def show_me(self) -> None:
        tour = self.ensure_tour()
        if tour is None:
            self.say("Show me needs the main window: open Learn from the Help menu.")
            return
        self.show_button.setEnabled(False)
        if not tour.show(self.stop):
            self.show_button.setEnabled(True)
        self.own_button.setEnabled(tour.own is not None)

    def back_to_own_session(self) -> None:
        said = self.tour.restore() if self.tour is not None else "Your own model and prompt are back."
        self.own_button.setEnabled(False)
        self.show_button.setEnabled(True)
        self.say(said)

    def _on_reached(self, stop_id: str) -> None:
        self.show_button.setEnabled(True)
        stop = next(s for s in self.stops if s.id == stop_id)
        self.status.setText(f"Shown: {formula_html(stop.title)}. Now try the questions above.")

    def _on_link(self, url) -> None:
        if url.scheme() == "answer":
            self.show_answer(int(url.path()))

    def show_answer(self, index: int) -> None:
        """The answer of the stop's question `index`, read from the trace shown: its layer and head selected,
        its panel brought forward, its sentences under the question in the page (in the status line they grew it
        by four lines and pushed the questions out of a short Learn column, 1920x1080)."""
        question = self.stop.tries[index]
        selection = self.session.selection
        layer = question.layer if question.layer is not None else selection.layer
        found = try_answers.answer(question.answer, self.session.trace, layer, question.text, selection.head)
        if found.layer is not None:
            self.session.select(layer=found.layer, **({} if found.head is None else {"head": found.head}))
        docks = getattr(self.window(), "docks", {})
        if found.panel in docks:
            docks[found.panel].show()
            docks[found.panel].raise_()
        self.answers[index] = found.text
        self._draw_page()
        self.text.scrollToAnchor(f"answer{index}")
        self.say(f"The answer is under question {index + 1}.")

    def _draw_page(self) -> None:
        """The stop's page drawn again where it was scrolled to, its answers shown in it."""
        scrolled = self.text.verticalScrollBar().value()
        self.text.setHtml(page_html(self.stop, self.index, len(self.stops), self.answers))
        self.text.verticalScrollBar().setValue(scrolled)

    def changeEvent(self, event) -> None:
        super().changeEvent(event)
        if event.type() in (QEvent.Type.PaletteChange, QEvent.Type.ApplicationPaletteChange):
            # Rich text fixes its links' colour as it is parsed: a page drawn in the light theme kept pure blue
            # links on the dark one (View ▸ Theme, drive27)
            QTimer.singleShot(0, self, self._draw_page)

    @property
    def answer(self) -> str:
        """The answer shown last on this stop ("" for none)."""
        return next(reversed(self.answers.values()), "")

    def _on_failed(self, message: str) -> None:
        self.show_button.setEnabled(True)
        self.say(message)


_RAISED = str.maketrans("ABDEGHIJKLMNOPRTUVWabdehijklmnoprstuvwxyz0123456789+-",
                        "ᴬᴮᴰᴱᴳᴴᴵᴶᴷᴸᴹᴺᴼᴾᴿᵀᵁⱽᵂᵃᵇᵈᵉʰⁱʲᵏˡᵐⁿᵒᵖʳˢᵗᵘᵛʷˣʸᶻ⁰¹²³⁴⁵⁶⁷⁸⁹⁺⁻")


def plain(title: str) -> str:
    """A title for plain text (the chooser): 'd_{QK}' as 'd_QK', the braces that group a script dropped, and a
    superscript Unicode has letters for raised ('W^O' as 'Wᴼ'; 'W^Q' stays, there is no raised Q)."""
    def raised(match: re.Match) -> str:
        body = match.group(1).strip("{}")
        up = body.translate(_RAISED)
        return up if all(a != b for a, b in zip(body, up)) else "^" + body

    title = re.sub(r"\^(\{[^}]*\}|[^\s{}_^=,·()])", raised, title)
    return re.sub(r"_\{([^}]*)\}", r"_\1", title)


def stop_tip(stop: Stop, index: int) -> str:
    """The tip of a panel's "?": the stop it opens, its title with its scripts drawn, on one line (Qt wraps a
    rich-text tip at about a third of its width: 'Learn: Z⁻¹ f_κ(S) V' over four lines)."""
    return f'<p style="white-space:pre">Learn: {formula_html(stop.title)} (stop {index + 1} of the path)</p>'


def page_html(stop: Stop, index: int, count: int, answers: dict[int, str] | None = None) -> str:
    """One stop as rich text: its title, its text and the questions to try, scripts drawn as in the panels'
    formulas (W^Q, d_{QK}); `answers` {question: text} shown under their questions."""
    answers = answers or {}

    def answered(i: int) -> str:
        return (f'<a name="answer{i}"></a><br><b>Answer:</b> {formula_html(answers[i])}' if i in answers else "")

    tries = "".join(f"<li>{formula_html(t.question)}"
                    + (f' <a href="answer:{i}">Show the answer</a>' if t.answer else "") + answered(i) + "</li>"
                    for i, t in enumerate(stop.tries))
    # the counter in the palette's text colour (italic, not gray): Presentation holds text at 7:1 or more
    return (f"<p><i>Stop {index + 1} of {count}</i></p><h3>{formula_html(stop.title)}</h3>"
            f"<p>{formula_html(stop.text)}</p><p><b>Try this</b></p><ul>{tries}</ul>")
