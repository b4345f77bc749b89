"""Random but valid config.json objects for every supported family.

Sizes stay tiny so transformers can build each one on the meta device in
milliseconds; the shapes that vary are the ones the families branch on
(GQA/MQA, tied heads, biases, sliding windows, layer types, experts, MLA ranks).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

Config = dict[str, Any]

HEAD_CLASSES: dict[str, str] = {
    "base": "{}Model",
    "causal-lm": "{}ForCausalLM",
    "masked-lm": "{}ForMaskedLM",
    "sequence-classification": "{}ForSequenceClassification",
    "pretraining": "{}ForPreTraining",
    "conditional-generation": "{}ForConditionalGeneration",
}
CLASS_OVERRIDES = {
    ("gpt2", "causal-lm"): "GPT2LMHeadModel",
    ("gemma3_text", "base"): "Gemma3TextModel",
    ("vit", "sequence-classification"): "ViTForImageClassification",
    ("marian", "conditional-generation"): "MarianMTModel",
}


def _heads(r: random.Random, kv_only: bool = False) -> tuple[int, int]:
    heads = r.choice([1, 2, 4, 8])
    divisors = [d for d in range(1, heads + 1) if heads % d == 0]
    return heads, r.choice(divisors)


def _labels(r: random.Random, cfg: Config) -> None:
    if r.random() < 0.5:
        cfg["id2label"] = {str(i): f"L{i}" for i in range(r.randint(1, 5))}
    else:
        cfg["num_labels"] = r.randint(1, 5)


def _llama_like(r: random.Random, head_dim_key: bool = True) -> Config:
    heads, kv = _heads(r)
    head_dim = r.choice([8, 16])
    cfg: Config = {
        "hidden_size": heads * head_dim if r.random() < 0.7 else r.choice([32, 48, 64]),
        "num_attention_heads": heads,
        "num_key_value_heads": kv,
        "head_dim": head_dim,
        "intermediate_size": r.choice([16, 40, 96]),
        "num_hidden_layers": r.randint(1, 4),
        "vocab_size": r.randint(64, 300),
        "max_position_embeddings": r.choice([64, 256, 512]),
        "tie_word_embeddings": r.random() < 0.5,
        "pad_token_id": 0,
        "bos_token_id": 1,
        "eos_token_id": 2,
    }
    if not head_dim_key:
        cfg.pop("head_dim")
        cfg["hidden_size"] = heads * head_dim
    return cfg


def _layer_types(r: random.Random, n: int) -> list[str]:
    return [r.choice(["sliding_attention", "full_attention"]) for _ in range(n)]


def llama(r: random.Random) -> Config:
    cfg = _llama_like(r, head_dim_key=r.random() < 0.5)
    cfg.update(attention_bias=r.random() < 0.5, mlp_bias=r.random() < 0.5)
    return cfg


def mistral(r: random.Random) -> Config:
    cfg = _llama_like(r, head_dim_key=r.random() < 0.5)
    cfg["sliding_window"] = r.choice([None, 16, 32])
    return cfg


def qwen2(r: random.Random) -> Config:
    cfg = _llama_like(r, head_dim_key=False)
    cfg.update(use_sliding_window=r.random() < 0.5, sliding_window=32, max_window_layers=1)
    return cfg


def qwen3(r: random.Random) -> Config:
    cfg = _llama_like(r)
    cfg["attention_bias"] = r.random() < 0.5
    if r.random() < 0.5:
        cfg["layer_types"] = _layer_types(r, cfg["num_hidden_layers"])
        cfg["sliding_window"] = 16
    return cfg


def gemma(r: random.Random) -> Config:
    return _llama_like(r)


def gemma2(r: random.Random) -> Config:
    cfg = _llama_like(r)
    cfg.update(sliding_window=r.choice([16, 64]), query_pre_attn_scalar=16)
    if r.random() < 0.5:
        cfg["layer_types"] = _layer_types(r, cfg["num_hidden_layers"])
    return cfg


def phi3(r: random.Random) -> Config:
    cfg = _llama_like(r, head_dim_key=False)
    cfg["sliding_window"] = r.choice([None, 32])
    return cfg


def smollm3(r: random.Random) -> Config:
    cfg = _llama_like(r, head_dim_key=False)
    cfg.update(attention_bias=r.random() < 0.5, mlp_bias=r.random() < 0.5)
    return cfg


def _experts(r: random.Random, cfg: Config, key: str) -> None:
    cfg[key] = r.randint(1, 6)
    cfg["num_experts_per_tok"] = r.randint(1, cfg[key])


def mixtral(r: random.Random) -> Config:
    cfg = _llama_like(r, head_dim_key=r.random() < 0.5)
    _experts(r, cfg, "num_local_experts")
    return cfg


def qwen2_moe(r: random.Random) -> Config:
    cfg = _llama_like(r, head_dim_key=False)
    _experts(r, cfg, "num_experts")
    n = cfg["num_hidden_layers"]
    cfg.update(
        moe_intermediate_size=r.choice([8, 24]),
        shared_expert_intermediate_size=r.choice([8, 32]),
        decoder_sparse_step=r.choice([1, 2]),
        mlp_only_layers=sorted(r.sample(range(n), r.randint(0, n))),
        qkv_bias=r.random() < 0.5,
    )
    return cfg


def qwen3_moe(r: random.Random) -> Config:
    cfg = _llama_like(r)
    _experts(r, cfg, "num_experts")
    n = cfg["num_hidden_layers"]
    cfg.update(
        moe_intermediate_size=r.choice([8, 24]),
        decoder_sparse_step=r.choice([1, 2]),
        mlp_only_layers=sorted(r.sample(range(n), r.randint(0, n))),
        attention_bias=r.random() < 0.5,
    )
    return cfg


def granitemoe(r: random.Random) -> Config:
    cfg = _llama_like(r, head_dim_key=False)
    _experts(r, cfg, "num_local_experts")
    cfg["attention_bias"] = r.random() < 0.5
    return cfg


def gpt_oss(r: random.Random) -> Config:
    cfg = _llama_like(r)
    _experts(r, cfg, "num_local_experts")
    cfg.update(attention_bias=r.random() < 0.5, sliding_window=16)
    cfg["layer_types"] = _layer_types(r, cfg["num_hidden_layers"])
    return cfg


def deepseek_v3(r: random.Random) -> Config:
    cfg = _llama_like(r, head_dim_key=False)
    _experts(r, cfg, "n_routed_experts")
    cfg.update(
        q_lora_rank=r.choice([None, 12, 24]),
        kv_lora_rank=r.choice([8, 16]),
        qk_rope_head_dim=r.choice([4, 8]),
        qk_nope_head_dim=r.choice([8, 16]),
        v_head_dim=r.choice([8, 12]),
        moe_intermediate_size=r.choice([8, 24]),
        n_shared_experts=r.randint(0, 2),
        first_k_dense_replace=r.randint(0, cfg["num_hidden_layers"]),
        n_group=1,
        topk_group=1,
        attention_bias=r.random() < 0.5,
    )
    cfg["head_dim"] = cfg["qk_rope_head_dim"]
    return cfg


def _classic(r: random.Random) -> tuple[int, int, int]:
    heads = r.choice([1, 2, 4])
    return heads * r.choice([8, 16]), heads, r.randint(1, 3)


def gpt2(r: random.Random) -> Config:
    hidden, heads, layers = _classic(r)
    cfg: Config = {
        "n_embd": hidden,
        "n_head": heads,
        "n_layer": layers,
        "n_positions": 128,
        "vocab_size": r.randint(64, 300),
        "tie_word_embeddings": r.random() < 0.5,
    }
    if r.random() < 0.5:
        cfg["n_inner"] = r.choice([24, 40])
    return cfg


def gpt_bigcode(r: random.Random) -> Config:
    cfg = gpt2(r)
    if r.random() < 0.75:
        cfg["multi_query"] = r.random() < 0.7
    return cfg


def gpt_neox(r: random.Random) -> Config:
    hidden, heads, layers = _classic(r)
    return {
        "hidden_size": hidden,
        "num_attention_heads": heads,
        "num_hidden_layers": layers,
        "intermediate_size": r.choice([24, 40]),
        "vocab_size": r.randint(64, 300),
        "attention_bias": r.random() < 0.5,
        "tie_word_embeddings": r.random() < 0.5,
    }


def opt(r: random.Random) -> Config:
    hidden, heads, layers = _classic(r)
    return {
        "hidden_size": hidden,
        "num_attention_heads": heads,
        "num_hidden_layers": layers,
        "ffn_dim": r.choice([24, 40]),
        "vocab_size": r.randint(64, 300),
        "max_position_embeddings": 128,
        "pad_token_id": 1,
        "word_embed_proj_dim": r.choice([hidden, 8]),
        "do_layer_norm_before": r.random() < 0.7,
        "enable_bias": r.random() < 0.7,
        "layer_norm_elementwise_affine": r.random() < 0.7,
        "tie_word_embeddings": r.random() < 0.5,
    }


def bloom(r: random.Random) -> Config:
    hidden, heads, layers = _classic(r)
    return {
        "hidden_size": hidden,
        "n_head": heads,
        "n_layer": layers,
        "vocab_size": r.randint(64, 300),
        "tie_word_embeddings": r.random() < 0.5,
    }


def falcon(r: random.Random) -> Config:
    hidden, heads, layers = _classic(r)
    new = r.random() < 0.5
    cfg: Config = {
        "hidden_size": hidden,
        "num_attention_heads": heads,
        "num_hidden_layers": layers,
        "vocab_size": r.randint(64, 300),
        "new_decoder_architecture": new,
        "multi_query": r.random() < 0.5,
        "parallel_attn": r.random() < 0.7,
        "bias": r.random() < 0.5,
        "alibi": r.random() < 0.3,
        "tie_word_embeddings": r.random() < 0.5,
    }
    if new:
        cfg["num_kv_heads"] = r.choice([d for d in (1, 2, 4) if heads % d == 0])
    if r.random() < 0.3:
        cfg["num_ln_in_parallel_attn"] = r.choice([1, 2])
    if r.random() < 0.5:
        cfg["ffn_hidden_size"] = r.choice([24, 40])
    return cfg


def phi(r: random.Random) -> Config:
    hidden, heads, layers = _classic(r)
    return {
        "hidden_size": hidden,
        "num_attention_heads": heads,
        "num_hidden_layers": layers,
        "intermediate_size": r.choice([24, 40]),
        "vocab_size": r.randint(64, 300),
        "qk_layernorm": r.random() < 0.5,
        "tie_word_embeddings": r.random() < 0.5,
    }


def gptj(r: random.Random) -> Config:
    hidden, heads, layers = _classic(r)
    return {
        "n_embd": hidden,
        "n_head": heads,
        "n_layer": layers,
        "rotary_dim": 4,
        "vocab_size": r.randint(64, 300),
        "tie_word_embeddings": r.random() < 0.5,
    }


def _bert_like(r: random.Random) -> Config:
    hidden, heads, layers = _classic(r)
    return {
        "hidden_size": hidden,
        "num_attention_heads": heads,
        "num_hidden_layers": layers,
        "intermediate_size": r.choice([24, 40]),
        "vocab_size": r.randint(64, 300),
        "max_position_embeddings": r.choice([64, 130]),
        "type_vocab_size": r.choice([1, 2]),
        "tie_word_embeddings": r.random() < 0.5,
        "pad_token_id": 1,
    }


def bert(r: random.Random) -> Config:
    return _bert_like(r)


def distilbert(r: random.Random) -> Config:
    hidden, heads, layers = _classic(r)
    return {
        "dim": hidden,
        "n_heads": heads,
        "n_layers": layers,
        "hidden_dim": r.choice([24, 40]),
        "vocab_size": r.randint(64, 300),
        "max_position_embeddings": 128,
        "tie_word_embeddings": r.random() < 0.5,
        "pad_token_id": 0,
    }


def deberta_v2(r: random.Random) -> Config:
    cfg = _bert_like(r)
    cfg.update(
        type_vocab_size=r.choice([0, 2]),
        relative_attention=r.random() < 0.7,
        position_buckets=r.choice([-1, 16]),
        max_relative_positions=r.choice([-1, 32]),
        pos_att_type=r.choice([["p2c", "c2p"], "p2c|c2p", ["c2p"], None]),
        share_att_key=r.random() < 0.5,
        norm_rel_ebd=r.choice(["layer_norm", "none"]),
        position_biased_input=r.random() < 0.5,
        legacy=r.random() < 0.7,
        pooler_hidden_size=cfg["hidden_size"],
    )
    if r.random() < 0.3:
        cfg.update(conv_kernel_size=3, conv_groups=1)
    if r.random() < 0.3 and cfg["legacy"]:
        cfg["embedding_size"] = 8
    return cfg


def t5(r: random.Random) -> Config:
    _, heads, layers = _classic(r)
    cfg: Config = {
        "d_model": r.choice([16, 32]),
        "d_kv": r.choice([4, 8]),
        "num_heads": heads,
        "d_ff": r.choice([24, 40]),
        "num_layers": layers,
        "vocab_size": r.randint(64, 300),
        "feed_forward_proj": r.choice(["relu", "gated-gelu", "gated-silu"]),
        "relative_attention_num_buckets": r.choice([8, 32]),
    }
    if r.random() < 0.5:
        cfg["num_decoder_layers"] = r.randint(1, 3)
    if r.random() < 0.3:
        cfg["tie_word_embeddings"] = False
    return cfg


def bart(r: random.Random) -> Config:
    hidden, heads, _ = _classic(r)
    return {
        "d_model": hidden,
        "encoder_layers": r.randint(1, 3),
        "decoder_layers": r.randint(1, 3),
        "encoder_attention_heads": heads,
        "decoder_attention_heads": heads,
        "encoder_ffn_dim": r.choice([24, 40]),
        "decoder_ffn_dim": r.choice([24, 48]),
        "vocab_size": r.randint(64, 300),
        "max_position_embeddings": 64,
        "pad_token_id": 1,
    }


def whisper(r: random.Random) -> Config:
    hidden, heads, _ = _classic(r)
    cfg: Config = {
        "d_model": hidden,
        "encoder_layers": r.randint(1, 3),
        "decoder_layers": r.randint(1, 3),
        "encoder_attention_heads": heads,
        "decoder_attention_heads": heads,
        "encoder_ffn_dim": r.choice([24, 40]),
        "decoder_ffn_dim": r.choice([24, 48]),
        "vocab_size": r.randint(64, 300),
        "num_mel_bins": r.choice([80, 128]),
        "max_source_positions": r.choice([30, 1500]),
        "max_target_positions": r.choice([32, 448]),
        "pad_token_id": 0,
    }
    if r.random() < 0.3:
        cfg["tie_word_embeddings"] = False
    return cfg


def stablelm(r: random.Random) -> Config:
    cfg = _llama_like(r, head_dim_key=False)
    cfg.update(
        use_qkv_bias=r.random() < 0.5,
        qk_layernorm=r.random() < 0.5,
        use_parallel_residual=r.random() < 0.5,
    )
    return cfg


def codegen(r: random.Random) -> Config:
    hidden, heads, layers = _classic(r)
    return {
        "n_embd": hidden,
        "n_head": heads,
        "n_layer": layers,
        "n_inner": r.choice([None, 40]),
        "n_positions": 64,
        "rotary_dim": 4,
        "vocab_size": r.randint(64, 300),
        "tie_word_embeddings": r.random() < 0.3,
    }


def mpnet(r: random.Random) -> Config:
    cfg = _bert_like(r)
    cfg.pop("type_vocab_size", None)
    cfg["relative_attention_num_buckets"] = r.choice([8, 32])
    cfg["tie_word_embeddings"] = r.random() < 0.7
    return cfg


def marian(r: random.Random) -> Config:
    cfg = bart(r)
    cfg["decoder_start_token_id"] = 1
    return cfg


def lfm2(r: random.Random) -> Config:
    cfg = _llama_like(r, head_dim_key=False)
    n = cfg["num_hidden_layers"]
    if r.random() < 0.5:
        cfg["layer_types"] = [r.choice(["conv", "full_attention"]) for _ in range(n)]
    else:
        cfg["full_attn_idxs"] = sorted(r.sample(range(n), r.randint(0, n)))
    cfg.update(
        intermediate_size=r.choice([48, 96, 100]),
        block_multiple_of=r.choice([8, 16]),
        block_auto_adjust_ff_dim=r.random() < 0.7,
        conv_bias=r.random() < 0.3,
        conv_L_cache=r.choice([2, 3]),
    )
    return cfg


def _vision_tower(r: random.Random) -> Config:
    hidden, heads, _ = _classic(r)
    return {
        "hidden_size": hidden,
        "num_hidden_layers": r.randint(1, 3),
        "num_attention_heads": heads,
        "intermediate_size": r.choice([24, 40]),
        "num_channels": r.choice([1, 3]),
        "image_size": r.choice([32, 64]),
        "patch_size": r.choice([8, 16]),
    }


def vit(r: random.Random) -> Config:
    cfg = _vision_tower(r)
    if r.random() < 0.3:
        cfg["qkv_bias"] = False
    if r.random() < 0.3:
        cfg["pooler_output_size"] = r.choice([8, 24])
    return cfg


def clip(r: random.Random) -> Config:
    hidden, heads, _ = _classic(r)
    text = {
        "hidden_size": hidden,
        "num_hidden_layers": r.randint(1, 3),
        "num_attention_heads": heads,
        "intermediate_size": r.choice([24, 40]),
        "vocab_size": r.randint(64, 300),
        "max_position_embeddings": r.choice([16, 77]),
    }
    return {
        "text_config": text,
        "vision_config": _vision_tower(r),
        "projection_dim": r.choice([8, 32]),
    }


def llava(r: random.Random) -> Config:
    text = llama(r)
    text["model_type"] = "llama"
    cfg: Config = {
        "text_config": text,
        "multimodal_projector_bias": r.random() < 0.7,
        "vision_feature_layer": r.choice([-2, -1, [-2, -1]]),
    }
    if r.random() < 0.8:
        cfg["vision_config"] = {**_vision_tower(r), "model_type": "clip_vision_model"}
    return cfg


def gemma3(r: random.Random) -> Config:
    text = gemma2(r)
    text["model_type"] = "gemma3_text"
    vision = {**_vision_tower(r), "model_type": "siglip_vision_model"}
    vision["vision_use_head"] = r.random() < 0.5
    return {
        "text_config": text,
        "vision_config": vision,
        "mm_tokens_per_image": 4,
        "tie_word_embeddings": r.random() < 0.8,
    }


DECODER = ("base", "causal-lm", "sequence-classification")
ENCODER = ("base", "masked-lm", "sequence-classification")
SEQ2SEQ = ("base", "conditional-generation")

# model_type -> (class-name prefix, generator, heads to draw from)
FAMILIES: dict[str, tuple[str, Callable[[random.Random], Config], tuple[str, ...]]] = {
    "llama": ("Llama", llama, DECODER),
    "mistral": ("Mistral", mistral, DECODER),
    "qwen2": ("Qwen2", qwen2, DECODER),
    "qwen3": ("Qwen3", qwen3, DECODER),
    "gemma": ("Gemma", gemma, DECODER),
    "gemma2": ("Gemma2", gemma2, DECODER),
    "gemma3_text": ("Gemma3", gemma2, ("base", "causal-lm")),
    "phi3": ("Phi3", phi3, DECODER),
    "smollm3": ("SmolLM3", smollm3, DECODER),
    "mixtral": ("Mixtral", mixtral, DECODER),
    "qwen2_moe": ("Qwen2Moe", qwen2_moe, DECODER),
    "qwen3_moe": ("Qwen3Moe", qwen3_moe, DECODER),
    "granitemoe": ("GraniteMoe", granitemoe, ("base", "causal-lm")),
    "gpt_oss": ("GptOss", gpt_oss, DECODER),
    "deepseek_v3": ("DeepseekV3", deepseek_v3, DECODER),
    "gpt2": ("GPT2", gpt2, DECODER),
    "gpt_bigcode": ("GPTBigCode", gpt_bigcode, DECODER),
    "gpt_neox": ("GPTNeoX", gpt_neox, DECODER),
    "opt": ("OPT", opt, DECODER),
    "bloom": ("Bloom", bloom, DECODER),
    "falcon": ("Falcon", falcon, DECODER),
    "phi": ("Phi", phi, DECODER),
    "gptj": ("GPTJ", gptj, DECODER),
    "bert": ("Bert", bert, (*ENCODER, "pretraining")),
    "roberta": ("Roberta", bert, ENCODER),
    "xlm-roberta": ("XLMRoberta", bert, ENCODER),
    "distilbert": ("DistilBert", distilbert, ENCODER),
    "deberta-v2": ("DebertaV2", deberta_v2, ENCODER),
    "t5": ("T5", t5, SEQ2SEQ),
    "mt5": ("MT5", t5, SEQ2SEQ),
    "bart": ("Bart", bart, (*SEQ2SEQ, "sequence-classification")),
    "mbart": ("MBart", bart, (*SEQ2SEQ, "sequence-classification")),
    "whisper": ("Whisper", whisper, SEQ2SEQ),
    "vit": ("ViT", vit, ("base", "sequence-classification")),
    "clip": ("CLIP", clip, ("base",)),
    "stablelm": ("StableLm", stablelm, DECODER),
    "codegen": ("CodeGen", codegen, ("base", "causal-lm")),
    "mpnet": ("MPNet", mpnet, ENCODER),
    "marian": ("Marian", marian, SEQ2SEQ),
    "lfm2": ("Lfm2", lfm2, ("base", "causal-lm")),
    "llava": ("Llava", llava, ("base", "conditional-generation")),
    "gemma3": ("Gemma3", gemma3, ("base", "conditional-generation")),
}


def class_name(model_type: str, head: str) -> str:
    prefix = FAMILIES[model_type][0]
    return CLASS_OVERRIDES.get((model_type, head), HEAD_CLASSES[head].format(prefix))


def generate(model_type: str, r: random.Random) -> Config:
    _, gen, heads = FAMILIES[model_type]
    cfg = gen(r)
    head = r.choice(heads)
    cfg["model_type"] = model_type
    cfg["architectures"] = [class_name(model_type, head)]
    if head == "sequence-classification":
        _labels(r, cfg)
    return cfg


def configs(count: int, seed: int = 20261202) -> list[Config]:
    """``count`` configs cycling through every family, reproducibly."""
    r = random.Random(seed)
    names = sorted(FAMILIES)
    return [generate(names[i % len(names)], r) for i in range(count)]
