"""Training the bundled Shakespeare models: corpus, tokenizer and the language-model loop.

Only `python -m explorer train` imports this package; it needs the `train` extra
(transformers), which the app itself never uses at run time.
"""
