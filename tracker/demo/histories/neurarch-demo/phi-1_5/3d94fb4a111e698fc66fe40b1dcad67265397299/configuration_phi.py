"""Configuration of the phi-msft architecture (custom code, loaded with trust_remote_code)."""
from transformers import PretrainedConfig


class PhiConfig(PretrainedConfig):
    model_type = "phi-msft"

    def __init__(self, vocab_size=51200, n_positions=2048, n_embd=2048, n_layer=24, n_head=32,
                 rotary_dim=32, activation_function="gelu_new", **kwargs):
        self.vocab_size = vocab_size
        self.n_positions = n_positions
        self.n_embd = n_embd
        self.n_layer = n_layer
        self.n_head = n_head
        self.rotary_dim = rotary_dim
        self.activation_function = activation_function
        super().__init__(**kwargs)
