"""Tokens in the API against the model's own tokenizer.json read by the tokenizers library:
to_single_token, to_str_tokens, prepend_bos, and one-sentence errors for wrong types."""
from __future__ import annotations

import numpy as np
import pytest
from tokenizers import Tokenizer

import explorer
from explorer.core.store import resources_dir

TOKENIZER = resources_dir() / "models" / "shakespeare-gqa" / "tokenizer.json"


@pytest.fixture(scope="module")
def reference() -> Tokenizer:
    return Tokenizer.from_file(str(TOKENIZER))


def test_a_single_token_is_its_id_and_a_split_word_is_refused(bundled, reference):
    assert bundled.to_single_token("To") == reference.encode("To", add_special_tokens=False).ids[0]
    assert len(reference.encode(" Mary", add_special_tokens=False).ids) > 1
    with pytest.raises(explorer.ExplorerError, match="tokens, not one"):
        bundled.to_single_token(" Mary")
    with pytest.raises(explorer.ExplorerError, match="string or a token id"):
        bundled.to_single_token([1])


def test_str_tokens_are_the_tokenizers_pieces(bundled, reference):
    text = "To be, or not"
    pieces = [p.replace("Ġ", "␣") for p in reference.encode(text).tokens]
    assert bundled.to_str_tokens(text) == pieces


def test_prepend_bos_puts_the_bos_token_first_or_takes_it_away(bundled, reference):
    bos = reference.token_to_id("<|endoftext|>")
    plain = bundled.encode("To be")
    with_bos = bundled.run("To be", prepend_bos=True).ids
    assert with_bos[0] == bos and with_bos[1:].tolist() == plain.tolist()
    assert bundled.run(with_bos.tolist(), prepend_bos=False).ids.tolist() == plain.tolist()


def test_a_list_where_one_prompt_is_expected_is_one_sentence(bundled):
    with pytest.raises(explorer.ExplorerError, match="list of 2 prompts"):
        bundled.encode(["To be", "or not"])
    with pytest.raises(explorer.ExplorerError, match="list of 2 prompts"):
        bundled.to_str_tokens(["To be", "or not"])
    runs = bundled.run(["To be", "or not"])
    assert [r.ids.tolist() for r in runs] == [bundled.encode("To be").tolist(), bundled.encode("or not").tolist()]
    assert isinstance(bundled.encode(np.array([1, 2])), np.ndarray)


def test_a_layer_or_head_of_the_wrong_type_is_one_sentence(bundled):
    run = bundled.run("To be")
    with pytest.raises(explorer.ExplorerError, match="layer must be an integer"):
        run.attention("1", 0)
    with pytest.raises(explorer.ExplorerError, match="head must be an integer"):
        run.attention(1, 0.5)
