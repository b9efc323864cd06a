"""An export of an absurd pixel size is refused in one sentence before anything is drawn, from the app's
export path as from the CLI (30000x30000 grew to 10.9 GB)."""
import resource

import pytest

from explorer.core.errors import ExplorerError
from explorer.drawing import export
from tests.app.synthetic_trace import build_trace


def test_a_huge_export_is_refused_before_drawing(tmp_path):
    trace = build_trace()
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with pytest.raises(ExplorerError, match="is too large: each side may be at most 16,384 pixels") as raised:
        export.export_attention(trace, tmp_path / "huge.png", 0, 0, size=(30000, 30000))
    assert "\n" not in str(raised.value)
    grown_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    assert grown_kib < 512 * 1024, "nothing of a 3.6 GB image was allocated"
    assert list(tmp_path.iterdir()) == []
