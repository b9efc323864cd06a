"""Every wrong type or range given to run, attribute, patch and heads is an ExplorerError of one sentence
naming the value, never a raw TypeError or ValueError, and never a silent guess (a bare number once ran as a
one-token prompt)."""
from __future__ import annotations

import numpy as np
import pytest

import explorer

IDS, OTHER = [1, 2, 3, 4], [4, 3, 2, 1]
I = explorer.Intervention()


@pytest.mark.parametrize("call, words", [
    (lambda m: m.run(123), "the prompt 123 is a single number"),
    (lambda m: m.run(np.int64(5)), "the prompt 5 is a single number"),
    (lambda m: m.run(np.zeros((2, 2, 2), dtype=np.int64)), "3-dimensional array of shape (2, 2, 2)"),
    (lambda m: m.run([]), "the prompt [] holds no token ids"),
    (lambda m: m.run(["To be", 3]), "prompt 1 of the list, 3, is neither a string nor"),
    (lambda m: m.run([7, "To be"]), "prompt 0 of the list, 7, is neither a string nor"),
    (lambda m: m.run([IDS, []]), "the prompt [] holds no token ids"),
    (lambda m: m.run([IDS, OTHER], progress=3), "progress=3 must be a function"),
    (lambda m: m.run([IDS, OTHER], sampling=3), "sampling must be an explorer.Sampling"),
    (lambda m: m.run(IDS, prepend_bos="yes"), "prepend_bos='yes' must be True, False or None"),
    (lambda m: m.run(IDS, activations=3), "activations=3 must be True, a hook name"),
    (lambda m: m.encode(3), "the prompt 3 is a single number"),
    (lambda m: m.to_str_tokens(3), "the prompt 3 is a single number"),
    (lambda m: m.attribute(123), "the prompt 123 is a single number"),
    (lambda m: m.attribute(["To be", 3], target=1, against=2), "prompt 1 of the list, 3,"),
    (lambda m: m.attribute([IDS, OTHER], target=[1], against=2), "target lists 1 values for 2 prompts"),
    (lambda m: m.attribute([IDS, OTHER], target=1, against=[2, 3, 4]), "against lists 3 values for 2 prompts"),
    (lambda m: m.attribute(IDS, target=1.5, against=2), "the target must be a string or a token id, not float"),
    (lambda m: m.attribute(IDS, position=9), "position 9 is out of range"),
    (lambda m: m.patch(123, 456, target=1, against=2), "the prompt 123 is a single number"),
    (lambda m: m.patch(["To be", 3], ["or not", "to be"], target=1, against=2), "prompt 1 of the list, 3,"),
    (lambda m: m.patch([IDS, OTHER], [OTHER], target=1, against=2), "two lists of prompts of the same length"),
    (lambda m: m.patch([IDS, OTHER], [OTHER, IDS], target=[1], against=2), "target lists 1 values for 2 prompts"),
    (lambda m: m.patch(IDS, OTHER, target=1, against=2, metric=3), "metric 3 is not one of"),
    (lambda m: m.patch(IDS, OTHER, target=1, against=2, site="mlp"), "site 'mlp' is not one of"),
    (lambda m: m.patch(IDS, OTHER, target=1, against=2, progress="x"), "progress='x' must be a function"),
    (lambda m: m.patch(IDS, OTHER, target=1, against=2, cancel=1), "cancel=1 must be a function"),
    (lambda m: m.heads(123), "the ids 123 is a single number"),
    (lambda m: m.heads("abc"), "the ids must be a sequence of token ids, not the string 'abc'"),
    (lambda m: m.heads([IDS, "abc"]), "not the string 'abc'"),
    (lambda m: m.heads(seed="x"), "seed='x' must be a whole number"),
    (lambda m: m.heads(seed=1.5), "seed=1.5 must be a whole number"),
    (lambda m: m.heads(IDS, repeat=0), "repeat=0 must be a whole number"),
    (lambda m: m.to_str_tokens(IDS, prepend_bos="x"), "prepend_bos='x' must be True, False or None"),
    (lambda m: m.save_hf(5), "save_hf takes a folder's path, not 5"),
    (lambda m: m.patch(IDS, OTHER, target=1, metric=lambda logits: "x"), "the metric returned 'x', not a number"),
    (lambda m: m.patch(IDS, OTHER, target=1, metric=lambda logits: np.nan), "the metric returned NaN"),
    (lambda m: m.run(IDS, intervention=I.patch_residual(1, 2, np.zeros(3))), "has 3 numbers; the residual stream has"),
    (lambda m: I.patch_head(0, 1, np.full((1, 32), np.nan)), "head values must be finite numbers; they hold nan"),
    (lambda m: I.patch_residual(0, 1, [0.0, np.inf]), "residual must be finite numbers; they hold inf"),
    (lambda m: I.ablate(0, 1, positions=-1), "an ablated position must be 0 or more, not -1"),
    (lambda m: I.ablate(0, 1, positions=[2, -1]), "an ablated position must be 0 or more, not -1"),
    (lambda m: I.ablate(0, 1, positions=2.0), "positions must be a position or a list of them, not 2.0"),
    (lambda m: I.patch_residual(0, -1, np.zeros(3)), "position must be 0 or more, not -1"),
    (lambda m: I.patch_mlp_out(0, np.zeros((1, 3)), start=-2), "start must be 0 or more, not -2"),
    (lambda m: I.hide(-1), "key must be 0 or more, not -1"),
    (lambda m: I.hide(1, first_layer="a"), "first_layer must be an integer, not 'a'"),
    (lambda m: I.hide_band(0, last_layer=-1), "last_layer must be 0 or more, not -1"),
    (lambda m: I.hide_band(0, high="b"), "high must be an integer, not 'b'"),
    (lambda m: I.kernel("exp", temperature="hot"), "kernel temperature must be a number, not 'hot'"),
    # boundary27: a repeat far past the context allocated 24 GB before it was refused; a run's step and force took
    # any number (force(2.7) forced id 2), a kv table's tokens overflowed in numpy, and meta loaded a model that failed
    (lambda m: m.heads(IDS, repeat=2 * 10**9), "are 8,000,000,000 tokens, more than the model's context"),
    (lambda m: m.run(IDS).step(2.5), "n=2.5 must be a whole number"),
    (lambda m: m.run(IDS).step("3"), "n='3' must be a whole number"),
    (lambda m: m.run(IDS).step(-1), "n=-1 must be a whole number, 0 or more"),
    (lambda m: m.run(IDS).force(2.7), "token_id=2.7 must be a whole number"),
    (lambda m: m.run(IDS).force(None), "token_id=None must be a whole number"),
    (lambda m: explorer.kv_table("shakespeare-gqa", tokens=2**70), "tokens=1180591620717411303424 is more than"),
    (lambda m: explorer.kv_table("shakespeare-gqa", tokens=-1), "tokens=-1 must be a whole number, 0 or more"),
    (lambda m: explorer.load("shakespeare-gqa", device="meta"), "'meta' is not a device: use cpu, cuda"),
])
def test_a_wrong_type_or_range_is_one_sentence_naming_the_value(bundled, call, words):
    with pytest.raises(explorer.ExplorerError) as caught:
        call(bundled)
    message = str(caught.value)
    assert words in message and "\n" not in message, message


def test_a_list_of_ids_is_still_one_prompt_and_a_list_of_lists_a_batch(bundled):
    one = bundled.run(IDS)
    assert one.ids.tolist() == IDS
    both = bundled.run([IDS, OTHER])
    assert [run.ids.tolist() for run in both] == [IDS, OTHER]


def test_an_id_the_models_own_tokenizer_gives_past_its_embedding_names_the_tokenizer(tmp_path):
    """A tokenizer with more ids than the model's embedding has rows: the error read as if the person's prompt were
    wrong ("token id 320 is outside the vocabulary of 320"); it names the tokenizer now (boundary27)."""
    from tokenizers import Tokenizer

    from tests.app.tiny_model import make_tiny_llama

    folder = make_tiny_llama(tmp_path / "tiny")
    tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
    tokenizer.add_tokens(["ZZZ"])
    tokenizer.save(str(folder / "tokenizer.json"))
    model = explorer.load(folder)
    size = model.loaded.config.vocab_size
    assert tokenizer.get_vocab_size() > size
    with pytest.raises(explorer.ExplorerError) as caught:
        model.run("ZZZ")
    message = str(caught.value)
    assert f"outside the vocabulary of {size}" in message and "tokenizer" in message and "holds a token of that " \
        f"id, past the model's embedding of {size} rows" in message and "\n" not in message, message


def test_a_tokenizer_whose_ids_run_past_the_embedding_is_named_though_it_has_fewer_ids(tmp_path):
    """Its pieces renumbered past the rows, with no more pieces than rows: only a count of ids was compared."""
    import json

    from tests.app.tiny_model import make_tiny_llama

    folder = make_tiny_llama(tmp_path / "tiny")
    spec = json.loads((folder / "tokenizer.json").read_text())
    vocab = spec["model"]["vocab"]
    vocab = {piece: (token_id + 5000 if token_id >= 100 else token_id) for piece, token_id in vocab.items()}
    spec["model"]["vocab"] = vocab
    (folder / "tokenizer.json").write_text(json.dumps(spec))
    model = explorer.load(folder)
    assert len(vocab) <= model.loaded.config.vocab_size
    with pytest.raises(explorer.ExplorerError, match=r"the tokenizer of .*tiny.* holds a token of that id, past"):
        model.run("The quick brown fox jumps over the lazy dog")
