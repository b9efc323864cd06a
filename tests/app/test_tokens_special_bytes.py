"""A generated special token's row says it stands for no bytes, as the prompt's special tokens' rows do: its
tooltip named the bytes of its name, read back from its display string, as if the model had written the text
'<|im_end|>'. The model here has an EOS (<|endoftext|>, after which no step follows) and a chat marker
<|im_end|>, special but not its EOS, so the model runs it and the panel lists it. The expectation is the
vocabulary's own: the tokenizers library marks the entry special."""
from __future__ import annotations

import pytest
import transformers
from PySide6.QtCore import Qt
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

from tests.app.test_tokens_after_slide import TEXT, tokens_panel
from tests.app.tiny_model import CORPUS, save_random_model
from tests.app.window_helpers import idle, opened

pytestmark = pytest.mark.usefixtures("store_home")
MARKER = "<|im_end|>"


@pytest.fixture(scope="module")
def chat_model(tmp_path_factory):
    """A tiny random Llama whose vocabulary holds its EOS and a special chat marker."""
    folder = tmp_path_factory.mktemp("models") / "tiny-chat"
    folder.mkdir()
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=300, special_tokens=["<|endoftext|>", MARKER],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tokenizer.train_from_iterator(CORPUS, trainer)
    tokenizer.save(str(folder / "tokenizer.json"))
    config = transformers.LlamaConfig(vocab_size=tokenizer.get_vocab_size(), hidden_size=32, intermediate_size=64,
                                      num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                                      max_position_embeddings=128, tie_word_embeddings=False,
                                      bos_token_id=0, eos_token_id=0)
    return save_random_model(transformers.LlamaForCausalLM, config, folder)


def test_a_generated_special_tokens_row_names_no_bytes(qtbot, window, chat_model):
    vocabulary = Tokenizer.from_file(str(chat_model / "tokenizer.json"))
    marker = vocabulary.token_to_id(MARKER)
    assert vocabulary.get_added_tokens_decoder()[marker].special and marker != 0      # 0: the EOS
    n_prompt = opened(qtbot, window, chat_model, TEXT).n_tokens
    window.session.requests.force_requested.emit(marker)     # what the next-token panel does on a click
    trace = idle(qtbot, window, lambda: window.session.trace.n_steps == 2)
    assert int(trace.token_ids[n_prompt]) == marker
    panel = tokens_panel(window)
    tip = panel.table.model().index(n_prompt, 1).data(Qt.ItemDataRole.ToolTipRole)
    assert "special token" in tip and MARKER.encode().hex(" ") not in tip
    assert panel.rows[n_prompt].raw == b"" and panel.rows[n_prompt].text == MARKER
