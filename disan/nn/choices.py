"""The names and defaults that the command line offers from the model floor, as plain values.

``disan --help`` and ``disan COMMAND --help`` build every parser without importing torch, so what a parser
shows is defined here and imported from here by the modules that use it. Where a registry maps names to
torch code (the encoders, the activations), this module holds the names it offers; tests/test_startup.py
checks them against the registry's keys.
"""
DEVICES = ("auto", "cpu", "cuda")  # --device (disan.nn.device.resolve_device)
# What a loaded model knows: "open", every word of the vectors it was trained with (as the authors' code
# knows every GloVe word at test time) when they are on this machine; "stored", the checkpoint's words only.
VOCABULARIES = ("open", "stored")

# The names of the registries' entries
ENCODER_NAMES = ("disan", "disan-nodir", "disan-uniform", "bilstm", "multihead", "s2t", "additive")  # baselines.ENCODERS
ACTIVATION_NAMES = ("elu", "relu", "tanh", "sigmoid")  # disan.nn.model.ACTIVATIONS

# The paper's settings that train's flags show as their defaults: of DiSANConfig (disan.nn.model), which
# says what each is, and of ModelConfig (disan.nn.heads)
D_H = 300
ACTIVATION = "elu"
DROPOUT = 0.25
D_FC = 300
