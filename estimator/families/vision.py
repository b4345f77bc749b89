"""Vision transformers: ViT and CLIP (a vision tower beside a text tower, both projected
into one embedding space). Patch tokens come from a Conv2d; the position table holds one
row per patch plus the class token.

Names and defaults follow transformers 5.24.0: models/vit/modeling_vit.py and
configuration_vit.py (qkv_bias True, o_proj always biased, pooler on ViTModel only),
models/clip/modeling_clip.py and configuration_clip.py (text 512 wide x 12, vision
768 x 12 at patch 32, projection_dim 512, a scalar logit_scale).
"""

from __future__ import annotations

from typing import NamedTuple

from estimator.architecture import Architecture, HeadKind
from estimator.blocks import attention, mlp
from estimator.blocks.layer import LayerParts, LayerTemplate, ModelParts, template
from estimator.config import (
    MAX_HEADS,
    MAX_LAYERS,
    MAX_POSITIONS,
    MAX_SMALL,
    MAX_VOCAB,
    MAX_WIDTH,
    Config,
)
from estimator.errors import ConfigError
from estimator.families.common import assemble
from estimator.families.family import Family, Request
from estimator.families.heads import num_labels

VISION_HEADS: frozenset[HeadKind] = frozenset({"base", "sequence-classification"})
VIT_ATTENTION = attention.Projections(
    "attention.q_proj", "attention.k_proj", "attention.v_proj", "attention.o_proj"
)
CLIP_ATTENTION = attention.Projections(
    "self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.out_proj"
)


def _pair(cfg: Config, key: str, default: int) -> tuple[int, int]:
    """image_size / patch_size: an int, or [height, width] as transformers also accepts."""
    value = cfg.raw.get(key)
    if isinstance(value, list) and len(value) == 2:
        sub = Config({"h": value[0], "w": value[1]}, source=f"{cfg.source}: {key}")
        return sub.size("h", limit=MAX_POSITIONS), sub.size("w", limit=MAX_POSITIONS)
    side = cfg.size(key, default, limit=MAX_POSITIONS)
    return side, side


def num_patches(cfg: Config, image_default: int, patch_default: int) -> tuple[int, int]:
    """(patches per image, patch side); refuses a patch larger than the image."""
    ih, iw = _pair(cfg, "image_size", image_default)
    ph, pw = _pair(cfg, "patch_size", patch_default)
    if ph > ih or pw > iw:
        raise ConfigError(
            f"{cfg.source}: patch_size ({ph}x{pw}) is larger than image_size ({ih}x{iw})",
            field="patch_size",
        )
    if ph != pw:
        raise ConfigError(f"{cfg.source}: patch_size must be square here", field="patch_size")
    return (ih // ph) * (iw // pw), ph


def _encoder_layer(
    cfg: Config,
    names: attention.Projections,
    hidden: int,
    heads: int,
    intermediate: int,
    *,
    norms: tuple[str, str],
    qkv_bias: bool,
    fc: tuple[str, str],
    activation_default: str,
) -> LayerTemplate:
    cfg.divides("num_attention_heads", heads, "hidden_size", hidden)
    parts = LayerParts()
    attention.separate_qkv(
        parts, names, hidden, heads, heads, hidden // heads, qkv_bias=qkv_bias, out_bias=True
    )
    parts.norm(norms[0], hidden, True)
    parts.norm(norms[1], hidden, True)
    ffn = mlp.plain(
        parts,
        fc[0],
        fc[1],
        hidden,
        intermediate,
        cfg.text("hidden_act", activation_default),
        bias=True,
    )
    spec = attention.spec(heads, heads, hidden // heads, causal=False)
    return template(parts, stack="encoder", attention=spec, feed_forward=ffn)


def _clip_layer(
    cfg: Config, hidden: int, heads: int, intermediate: int, activation_default: str
) -> LayerTemplate:
    """CLIPEncoderLayer's names, also SigLIP's; the towers differ in the activation."""
    return _encoder_layer(
        cfg,
        CLIP_ATTENTION,
        hidden,
        heads,
        intermediate,
        norms=("layer_norm1", "layer_norm2"),
        qkv_bias=True,
        fc=("mlp.fc1", "mlp.fc2"),
        activation_default=activation_default,
    )


def build_vit(cfg: Config, req: Request) -> Architecture:
    """ViT's tensors for ``req.architecture``; absent keys take ``ViTConfig``'s defaults."""
    hidden = cfg.size("hidden_size", 768, limit=MAX_WIDTH)
    heads = cfg.size("num_attention_heads", 12, limit=MAX_HEADS)
    layers = cfg.size("num_hidden_layers", 12, limit=MAX_LAYERS)
    intermediate = cfg.size("intermediate_size", 3072, limit=MAX_WIDTH)
    channels = cfg.size("num_channels", 3, limit=MAX_SMALL)
    patches, patch = num_patches(cfg, 224, 16)
    layer = _encoder_layer(
        cfg,
        VIT_ATTENTION,
        hidden,
        heads,
        intermediate,
        norms=("layernorm_before", "layernorm_after"),
        qkv_bias=cfg.flag("qkv_bias", True),
        fc=("mlp.fc1", "mlp.fc2"),
        activation_default="gelu",
    )
    prefix = "" if req.head == "base" else "vit."
    model = ModelParts()
    top = LayerParts()
    top.param("embeddings.cls_token", (1, 1, hidden), "embedding")
    top.param("embeddings.position_embeddings", (1, patches + 1, hidden), "position")
    top.param(
        "embeddings.patch_embeddings.projection.weight",
        (hidden, channels, patch, patch),
        "embedding",
    )
    top.param("embeddings.patch_embeddings.projection.bias", (hidden,), "embedding")
    model.extend(prefix, top)
    model.layers(f"{prefix}layers.", [layer] * layers)
    tail = LayerParts()
    tail.norm("layernorm", hidden, True)
    if req.head == "base":
        pooled = cfg.size("pooler_output_size", hidden, limit=MAX_WIDTH)
        tail.linear("pooler.dense", hidden, pooled, True, "head")
    model.extend(prefix, tail)
    if req.head == "sequence-classification":
        labels = num_labels(cfg)
        head = LayerParts()
        head.linear("classifier", hidden, labels, True, "head")
        model.extend("", head)
    return assemble(
        cfg,
        model,
        req,
        family="vit",
        hidden_size=hidden,
        vocab_size=0,
        max_position_embeddings=None,
        tie_word_embeddings=False,
        norm="layernorm",
        position="learned",
        hidden_dropout=cfg.number("hidden_dropout_prob", 0.0) or 0.0,
    )


def _tower(cfg: Config, key: str) -> Config:
    section = cfg.mapping(key)
    return Config(section or {}, source=f"{cfg.source}: {key}")


def build_clip(cfg: Config, req: Request) -> Architecture:
    """CLIP's text and vision towers and projections; absent keys take the sub-configs'."""
    text = _tower(cfg, "text_config")
    vision = _tower(cfg, "vision_config")
    t_hidden = text.size("hidden_size", 512, limit=MAX_WIDTH)
    v_hidden = vision.size("hidden_size", 768, limit=MAX_WIDTH)
    vocab = text.size("vocab_size", 49408, limit=MAX_VOCAB)
    positions = text.size("max_position_embeddings", 77, limit=MAX_POSITIONS)
    patches, patch = num_patches(vision, 224, 32)
    channels = vision.size("num_channels", 3, limit=MAX_SMALL)
    projection = cfg.size("projection_dim", 512, limit=MAX_WIDTH)
    towers = []
    for tower, hidden, heads, inter in (
        (text, t_hidden, 8, 2048),
        (vision, v_hidden, 12, 3072),
    ):
        towers.append(
            (
                tower.size("num_hidden_layers", 12, limit=MAX_LAYERS),
                _clip_layer(
                    tower,
                    hidden,
                    tower.size("num_attention_heads", heads, limit=MAX_HEADS),
                    tower.size("intermediate_size", inter, limit=MAX_WIDTH),
                    "quick_gelu",
                ),
            )
        )
    model = ModelParts()
    model.param("logit_scale", (), "other")
    top = LayerParts()
    top.param("embeddings.token_embedding.weight", (vocab, t_hidden), "embedding")
    top.param("embeddings.position_embedding.weight", (positions, t_hidden), "position")
    model.extend("text_model.", top)
    model.layers("text_model.encoder.layers.", [towers[0][1]] * towers[0][0])
    tail = LayerParts()
    tail.norm("final_layer_norm", t_hidden, True)
    model.extend("text_model.", tail)
    top = LayerParts()
    top.param("embeddings.class_embedding", (v_hidden,), "embedding")
    top.param("embeddings.patch_embedding.weight", (v_hidden, channels, patch, patch), "embedding")
    top.param("embeddings.position_embedding.weight", (patches + 1, v_hidden), "position")
    top.norm("pre_layrnorm", v_hidden, True)
    model.extend("vision_model.", top)
    model.layers("vision_model.encoder.layers.", [towers[1][1]] * towers[1][0], towers[0][0])
    tail = LayerParts()
    tail.norm("post_layernorm", v_hidden, True)
    model.extend("vision_model.", tail)
    head = LayerParts()
    head.linear("visual_projection", v_hidden, projection, False, "head")
    head.linear("text_projection", t_hidden, projection, False, "head")
    model.extend("", head)
    return assemble(
        cfg,
        model,
        req,
        family="clip",
        hidden_size=t_hidden,
        vocab_size=vocab,
        max_position_embeddings=positions,
        tie_word_embeddings=False,
        norm="layernorm",
        position="learned",
    )


class TowerDefaults(NamedTuple):
    """A CLIP vision tower's config defaults (CLIPVisionConfig's, or a wrapper's own)."""

    hidden: int = 768
    intermediate: int = 3072
    layers: int = 12
    heads: int = 12
    image: int = 224
    patch: int = 32


def clip_vision_tower(
    model: ModelParts, prefix: str, vision: Config, first_index: int, d: TowerDefaults
) -> tuple[int, int]:
    """CLIPVisionTransformer's tensors under ``prefix`` (embeddings, pre-norm, encoder layers,
    post-norm), as vision-language wrappers embed it; returns (hidden size, layer count)."""
    hidden = vision.size("hidden_size", d.hidden, limit=MAX_WIDTH)
    count = vision.size("num_hidden_layers", d.layers, limit=MAX_LAYERS)
    layer = _clip_layer(
        vision,
        hidden,
        vision.size("num_attention_heads", d.heads, limit=MAX_HEADS),
        vision.size("intermediate_size", d.intermediate, limit=MAX_WIDTH),
        "quick_gelu",
    )
    patches, patch = num_patches(vision, d.image, d.patch)
    channels = vision.size("num_channels", 3, limit=MAX_SMALL)
    top = LayerParts()
    top.param("embeddings.class_embedding", (hidden,), "embedding")
    top.param("embeddings.patch_embedding.weight", (hidden, channels, patch, patch), "embedding")
    top.param("embeddings.position_embedding.weight", (patches + 1, hidden), "position")
    top.norm("pre_layrnorm", hidden, True)
    model.extend(prefix, top)
    model.layers(f"{prefix}encoder.layers.", [layer] * count, first_index)
    tail = LayerParts()
    tail.norm("post_layernorm", hidden, True)
    model.extend(prefix, tail)
    return hidden, count


SIGLIP_TOWER = TowerDefaults(
    hidden=768, intermediate=3072, layers=12, heads=12, image=224, patch=16
)
"""SiglipVisionConfig's defaults (transformers 5.24.0 configuration_siglip.py)."""


def siglip_vision_tower(
    model: ModelParts, prefix: str, vision: Config, first_index: int
) -> tuple[int, int]:
    """SiglipVisionTransformer under ``prefix``: a biased patch Conv2d and one position row
    per patch (no class token, no pre-norm), CLIP-named encoder layers, the post-norm, and
    with ``vision_use_head`` (default true) the attention-pooling head (a probe token and
    nn.MultiheadAttention's packed in_proj). Returns (hidden size, layer count)."""
    d = SIGLIP_TOWER
    hidden = vision.size("hidden_size", d.hidden, limit=MAX_WIDTH)
    heads = vision.size("num_attention_heads", d.heads, limit=MAX_HEADS)
    intermediate = vision.size("intermediate_size", d.intermediate, limit=MAX_WIDTH)
    count = vision.size("num_hidden_layers", d.layers, limit=MAX_LAYERS)
    layer = _clip_layer(vision, hidden, heads, intermediate, "gelu_pytorch_tanh")
    patches, patch = num_patches(vision, d.image, d.patch)
    channels = vision.size("num_channels", 3, limit=MAX_SMALL)
    top = LayerParts()
    top.param("embeddings.patch_embedding.weight", (hidden, channels, patch, patch), "embedding")
    top.param("embeddings.patch_embedding.bias", (hidden,), "embedding")
    top.param("embeddings.position_embedding.weight", (patches, hidden), "position")
    model.extend(prefix, top)
    model.layers(f"{prefix}encoder.layers.", [layer] * count, first_index)
    tail = LayerParts()
    tail.norm("post_layernorm", hidden, True)
    if vision.flag("vision_use_head", True):
        tail.param("head.probe", (1, 1, hidden), "other")
        tail.param("head.attention.in_proj_weight", (3 * hidden, hidden), "other")
        tail.param("head.attention.in_proj_bias", (3 * hidden,), "other")
        tail.linear("head.attention.out_proj", hidden, hidden, True, "other")
        tail.norm("head.layernorm", hidden, True)
        tail.linear("head.mlp.fc1", hidden, intermediate, True, "other")
        tail.linear("head.mlp.fc2", intermediate, hidden, True, "other")
    model.extend(prefix, tail)
    return hidden, count


VIT = Family("vit", "ViT", "ViTModel", VISION_HEADS, build_vit)
CLIP = Family("clip", "CLIP", "CLIPModel", frozenset({"base"}), build_clip)
