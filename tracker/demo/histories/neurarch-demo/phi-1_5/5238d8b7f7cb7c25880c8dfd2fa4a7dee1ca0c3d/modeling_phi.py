"""Modeling code of the phi-msft architecture (custom code, loaded with trust_remote_code).

Fused Wqkv projection, parallel attention and MLP blocks.
"""
import torch
from torch import nn


class MHA(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.Wqkv = nn.Linear(config.n_embd, 3 * config.n_embd)
        self.out_proj = nn.Linear(config.n_embd, config.n_embd)


class ParallelBlock(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.ln = nn.LayerNorm(config.n_embd)
        self.mixer = MHA(config)
        self.mlp = nn.Sequential(nn.Linear(config.n_embd, 4 * config.n_embd), nn.GELU(),
                                 nn.Linear(4 * config.n_embd, config.n_embd))
