"""The Activation patching form at 1366x768 in the real window at its launch layout, beside Learn (as on a first
start) and without: the target and against fields have room for 12 average characters of their font, and the form
is at least as wide as the map beside it. Seen (issue 22): the form ~300 px, the fields ~30 px showing " king" and
" queen" cut, ~60 % of the dock the map."""
from __future__ import annotations

import pytest

from tests.app.test_patching_layout import patching_tab, text_room

pytestmark = pytest.mark.usefixtures("store_home")   # the store in the test's folder


@pytest.mark.parametrize("learn", [True, False], ids=["learn", "no-learn"])
def test_the_answer_fields_have_room_for_twelve_characters_and_the_form_a_fair_share(qtbot, tmp_path, monkeypatch,
                                                                                     learn):
    with patching_tab(qtbot, tmp_path, monkeypatch, "1366x768", learn) as (journey, view):
        for name, field in (("target", view.target), ("against", view.against)):
            least = 12 * field.fontMetrics().averageCharWidth()
            assert field.isVisible() and text_room(field) >= least, \
                f"the {name} field has {text_room(field)} px for its text, under 12 characters' {least}"
        assert view.controls.width() >= view.map_area.width() - 1, \
            f"the form {view.controls.width()} px beside a map of {view.map_area.width()}"
