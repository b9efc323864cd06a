"""A Hugging Face folder's weights are the file's pages, memory-mapped, not a second copy in RAM."""
from __future__ import annotations

import numpy as np
import torch

from explorer.core.loaders.hf import read_safetensors
from explorer.core.runtime import load_model
from tests.core.tiny_checkpoints import write_hf_folder


def _file_range(path) -> tuple[int, int]:
    """The address range where this process maps `path` (from /proc/self/maps)."""
    ranges = []
    with open("/proc/self/maps") as maps:
        for line in maps:
            if line.rstrip().endswith(str(path)):
                low, high = (int(x, 16) for x in line.split()[0].split("-"))
                ranges.append((low, high))
    assert ranges, f"{path} is not mapped"
    return min(r[0] for r in ranges), max(r[1] for r in ranges)


def test_tensors_are_views_of_the_mapped_file_with_its_values(tmp_path):
    _, written = write_hf_folder(tmp_path / "m")
    path = tmp_path / "m" / "model.safetensors"
    tensors = read_safetensors([path])
    low, high = _file_range(path)
    for name, tensor in tensors.items():
        assert low <= tensor.data_ptr() < high, name                    # inside the file's mapping: no copy
        torch.testing.assert_close(tensor, written[name], rtol=0, atol=0)


def test_writing_a_mapped_tensor_leaves_the_file_as_it_was(tmp_path):
    write_hf_folder(tmp_path / "m")
    path = tmp_path / "m" / "model.safetensors"
    before = path.read_bytes()
    tensors = read_safetensors([path])
    next(iter(tensors.values())).fill_(7.0)
    assert path.read_bytes() == before


def test_the_built_model_multiplies_the_files_pages(tmp_path):
    """No weight of the built model lies outside the mapping (stacking did not copy any)."""
    write_hf_folder(tmp_path / "m")
    loaded = load_model(tmp_path / "m")
    low, high = _file_range(tmp_path / "m" / "model.safetensors")
    outside = [name for name, p in loaded.model.named_parameters() if not low <= p.data_ptr() < high]
    assert outside == []
    ids = np.arange(5)
    logits = loaded.model.logits(loaded.model(torch.as_tensor(ids), ids, None, None))
    assert torch.isfinite(logits).all()
