"""The activation functions the engine computes, by the names config.json files give them (model.ACTIVATIONS's
keys; a test keeps the two equal). Torch-free, so that the config rules and readers can check a name
before anything is built."""

ACTIVATION_NAMES = frozenset({"silu", "swish", "gelu", "relu", "gelu_new", "gelu_pytorch_tanh", "gelu_fast"})
