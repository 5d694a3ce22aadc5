#!/usr/bin/env python3
"""Build today's model families at tiny sizes, export them with both torch exporters in training
mode, and record what PyTorch keeps: the ground truth tests/cli re-predicts without torch.

    /work/memplan-venv/bin/python tools/modern_exporters/export_rows.py [--only S] [--out DIR]

Each family is built from its library's config class with random weights (transformers, timm,
torchvision, diffusers; nothing is downloaded), at a size that keeps its graph small. Per family and exporter
(TorchScript at opset 17, the torch.export-based exporter at opset 18), in training mode:

  * the export, its weights stripped (initializers become external data in a file that is not
    kept, as tools/gpu/compare_with_torch.py does) and its per-node metadata dropped, compressed:
    DIR/<family>.<exporter>.onnx.xz;
  * torch's saved-for-backward bytes of one step's forward and loss, once per storage, parameters
    and module buffers excluded (memplan's saved_activation_bytes), measured with
    saved_tensors_hooks on the CPU, dropout and attention's output layout as the GPU runs them
    (CudaDropout, CudaSdpaLayout);
  * the step's live peak (forward, backward, Adam step) from torch's MemTracker on the CPU.

The loss is memplan's default (`--loss auto`): cross entropy over the last axis for rank-2/3
logits, mean squared error otherwise. Rows go to DIR/rows.jsonl; an exporter that fails records
its error (type and first line) instead of a graph: a finding about the exporter, listed in
docs/measurements.md.
"""
import argparse
import json
import os
import sys
import traceback
import warnings

import torch
import torch.nn as nn
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..")

BATCH = 2
SEQ = 16
VOCAB = 256
IMAGE = 32
TINY_TEXT = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                 intermediate_size=64, vocab_size=VOCAB, max_position_embeddings=64)


class Logits(nn.Module):
    """One tensor out of a library model: its logits (or the named field)."""

    def __init__(self, model, field="logits", names=(), **fixed):
        super().__init__()
        self.model = model
        self.field = field
        self.names = names  # keyword names of the inputs, in order; () = positional
        self.fixed = fixed

    def forward(self, *inputs):
        if self.names:
            out = self.model(**dict(zip(self.names, inputs)), **self.fixed)
        else:
            out = self.model(*inputs, **self.fixed)
        if isinstance(out, torch.Tensor):
            return out
        if isinstance(out, (tuple, list)):
            return out[0]
        return getattr(out, self.field)


def ids(n=SEQ):
    return (torch.randint(0, VOCAB, (BATCH, n)),)


def image(size=IMAGE, channels=3):
    return (torch.randn(BATCH, channels, size, size),)


def audio(samples=400):
    return (torch.randn(BATCH, samples),)


# wav2vec2 / HuBERT, tiny: two conv feature layers (kernel 10 stride 5, kernel 3 stride 2: 400
# samples -> 79 -> 39 frames), a grouped positional conv.
SPEECH = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64,
              conv_dim=(16, 16), conv_stride=(5, 2), conv_kernel=(10, 3),
              num_conv_pos_embeddings=16, num_conv_pos_embedding_groups=4, num_labels=4,
              mask_time_prob=0.0, layerdrop=0.0)


def hf(config_name, model_name, inputs, field="logits", **config):
    def build():
        import transformers
        cfg = getattr(transformers, config_name)(**config)
        cfg._attn_implementation = "eager"
        model = getattr(transformers, model_name)(cfg)
        if "CausalLM" in model_name:
            return Logits(model, field, use_cache=False)
        return Logits(model, field)
    build.attention = "eager"
    return build, inputs


def hf_seq2seq(config_name, model_name, inputs, **config):
    def build():
        import transformers
        cfg = getattr(transformers, config_name)(**config)
        cfg._attn_implementation = "eager"
        return Logits(getattr(transformers, model_name)(cfg), use_cache=False,
                      names=("input_ids", "decoder_input_ids"))
    build.attention = "eager"
    return build, inputs


def timm_model(name, inputs, **kwargs):
    def build():
        import timm
        return timm.create_model(name, pretrained=False, **kwargs)
    return build, inputs


def timm_class(module, cls, inputs, **kwargs):
    def build():
        import importlib
        return getattr(importlib.import_module("timm.models." + module), cls)(**kwargs)
    return build, inputs


def _bit():
    """BiT (timm's resnetv2_50x1_bit): weight-standardised convs and GroupNorm, two stages."""
    from functools import partial

    from timm.layers import GroupNormAct, StdConv2d
    from timm.models.resnetv2 import ResNetV2
    return ResNetV2(layers=[1, 1], channels=(64, 128), num_classes=10, stem_type="fixed",
                    conv_layer=partial(StdConv2d, eps=1e-8),
                    norm_layer=partial(GroupNormAct, num_groups=8))


class PointNet(nn.Module):
    """PointNet's shared MLP over points and its global feature, torch.max(x, 2)[0]."""

    def __init__(self):
        super().__init__()
        self.mlp = nn.Sequential(nn.Conv1d(3, 32, 1), nn.BatchNorm1d(32), nn.ReLU(),
                                 nn.Conv1d(32, 64, 1), nn.BatchNorm1d(64), nn.ReLU())
        self.head = nn.Linear(64, 10)

    def forward(self, points):
        return self.head(torch.max(self.mlp(points), 2)[0])


class ConformerConv(nn.Module):
    """Conformer's convolution module (torchaudio): pointwise conv, GLU, depthwise conv,
    BatchNorm, SiLU, pointwise conv; its feature map then averaged into class logits."""

    def __init__(self, dim=32):
        super().__init__()
        self.pw1 = nn.Conv1d(dim, 2 * dim, 1)
        self.glu = nn.GLU(dim=1)
        self.dw = nn.Conv1d(dim, dim, 7, padding=3, groups=dim)
        self.bn = nn.BatchNorm1d(dim)
        self.pw2 = nn.Conv1d(dim, dim, 1)
        self.head = nn.Linear(dim, 10)

    def forward(self, x):
        y = self.pw2(F.silu(self.bn(self.dw(self.glu(self.pw1(x))))))
        return self.head((x + y).mean(2))


class WeightStandardised(nn.Module):
    """BiT's original StdConv: w = (w - m) / sqrt(v + eps) with torch.var_mean."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 16, 3, padding=1)
        self.conv2 = nn.Conv2d(16, 16, 3, padding=1)
        self.head = nn.Linear(16, 10)

    @staticmethod
    def standardised(conv, x):
        v, m = torch.var_mean(conv.weight, dim=[1, 2, 3], keepdim=True, unbiased=False)
        return F.conv2d(x, (conv.weight - m) / torch.sqrt(v + 1e-10), conv.bias, padding=1)

    def forward(self, x):
        x = F.relu(self.standardised(self.conv1, x))
        x = F.relu(self.standardised(self.conv2, x))
        return self.head(x.mean((2, 3)))


class DetrHeads(nn.Module):
    """DETR's two trained heads on shared query features: class logits [N, Q, C + 1] (cross
    entropy) and boxes [N, Q, 4] from a 3-layer MLP through a sigmoid (a regression loss), trained
    on the sum of the two losses (issue 44: a loss over several outputs)."""

    def __init__(self, dim=32, classes=10):
        super().__init__()
        self.patches = nn.Conv2d(3, dim, 8, stride=8)
        self.proj = nn.Linear(dim, dim)
        self.norm = nn.LayerNorm(dim)
        self.class_head = nn.Linear(dim, classes + 1)
        self.box_head = nn.Sequential(nn.Linear(dim, dim), nn.ReLU(), nn.Linear(dim, dim),
                                      nn.ReLU(), nn.Linear(dim, 4))

    def forward(self, image):
        tokens = F.relu(self.patches(image)).flatten(2).transpose(1, 2)
        queries = self.norm(F.gelu(self.proj(tokens)))
        return self.class_head(queries), self.box_head(queries).sigmoid()


def two_heads(cls, inputs, outputs, losses):
    """A model with several trained outputs: `outputs` names them in the export, `losses` gives
    each its loss (memplan's --loss-output / --loss lists)."""
    def build():
        return cls()
    build.outputs, build.losses = outputs, losses
    return build, inputs


class TimestepUNet(nn.Module):
    """diffusers' UNet2DModel (DDPM's noise predictor: ResNet blocks with GroupNorm and a timestep
    embedding, self-attention at the lower resolution), tiny: the noise it predicts for a 16x16
    image at each sample's timestep (an input, so the batch stays symbolic), trained with MSE as a
    diffusion model is."""

    def __init__(self):
        super().__init__()
        from diffusers import UNet2DModel
        self.unet = UNet2DModel(sample_size=16, in_channels=3, out_channels=3, layers_per_block=1,
                                block_out_channels=(16, 32),
                                down_block_types=("DownBlock2D", "AttnDownBlock2D"),
                                up_block_types=("AttnUpBlock2D", "UpBlock2D"),
                                norm_num_groups=8, attention_head_dim=8)

    def forward(self, sample, timesteps):
        return self.unet(sample, timesteps).sample


class VaeDecoder(nn.Module):
    """diffusers' AutoencoderKL decoder (Stable Diffusion's VAE, tiny): latent to image."""

    def __init__(self):
        super().__init__()
        from diffusers import AutoencoderKL
        self.vae = AutoencoderKL(in_channels=3, out_channels=3, latent_channels=4,
                                 down_block_types=("DownEncoderBlock2D",) * 2,
                                 up_block_types=("UpDecoderBlock2D",) * 2,
                                 block_out_channels=(16, 32), layers_per_block=1,
                                 norm_num_groups=8, sample_size=16)

    def forward(self, latent):
        return self.vae.decode(latent).sample


def tv_model(name, inputs, **kwargs):
    def build():
        import torchvision
        return torchvision.models.get_model(name, weights=None, **kwargs)
    return build, inputs


LM = dict(TINY_TEXT)
FAMILIES = {
    # Decoder LMs.
    "llama": hf("LlamaConfig", "LlamaForCausalLM", ids(), num_key_value_heads=2, **LM),
    "mistral": hf("MistralConfig", "MistralForCausalLM", ids(), num_key_value_heads=2,
                  sliding_window=8, **LM),
    "mixtral": hf("MixtralConfig", "MixtralForCausalLM", ids(), num_key_value_heads=2,
                  num_local_experts=4, num_experts_per_tok=2, **LM),
    "qwen2": hf("Qwen2Config", "Qwen2ForCausalLM", ids(), num_key_value_heads=2, **LM),
    "gemma": hf("GemmaConfig", "GemmaForCausalLM", ids(), num_key_value_heads=2, head_dim=8,
                **LM),
    "phi": hf("PhiConfig", "PhiForCausalLM", ids(), partial_rotary_factor=0.5, **LM),
    "gpt2": hf("GPT2Config", "GPT2LMHeadModel", ids(), n_embd=32, n_layer=2, n_head=4,
               vocab_size=VOCAB, n_positions=64),
    "gpt_neox": hf("GPTNeoXConfig", "GPTNeoXForCausalLM", ids(), rotary_pct=0.25, **LM),
    "falcon": hf("FalconConfig", "FalconForCausalLM", ids(), hidden_size=32, num_hidden_layers=2,
                 num_attention_heads=4, vocab_size=VOCAB),
    "opt": hf("OPTConfig", "OPTForCausalLM", ids(), hidden_size=32, num_hidden_layers=2,
              num_attention_heads=4, ffn_dim=64, vocab_size=VOCAB, max_position_embeddings=64,
              word_embed_proj_dim=32),
    "bloom": hf("BloomConfig", "BloomForCausalLM", ids(), hidden_size=32, n_layer=2, n_head=4,
                vocab_size=VOCAB),
    "mpt": hf("MptConfig", "MptForCausalLM", ids(), d_model=32, n_layers=2, n_heads=4,
              vocab_size=VOCAB, max_seq_len=64),
    # Encoders.
    "bert": hf("BertConfig", "BertForMaskedLM", ids(), **TINY_TEXT),
    "roberta": hf("RobertaConfig", "RobertaForMaskedLM", ids(), **TINY_TEXT),
    "deberta_v2": hf("DebertaV2Config", "DebertaV2ForMaskedLM", ids(), **TINY_TEXT),
    "electra": hf("ElectraConfig", "ElectraForMaskedLM", ids(), embedding_size=32, **TINY_TEXT),
    # Encoder-decoders (decoder input = the same ids).
    "t5": hf_seq2seq("T5Config", "T5ForConditionalGeneration", ids() + ids(), d_model=32,
                     d_kv=8, d_ff=64, num_layers=2, num_heads=4, vocab_size=VOCAB),
    "bart": hf_seq2seq("BartConfig", "BartForConditionalGeneration", ids() + ids(),
                       d_model=32, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4,
                       decoder_attention_heads=4, encoder_ffn_dim=64, decoder_ffn_dim=64,
                       vocab_size=VOCAB, max_position_embeddings=64),
    "marian": hf_seq2seq("MarianConfig", "MarianMTModel", ids() + ids(), d_model=32,
                         encoder_layers=2, decoder_layers=2, encoder_attention_heads=4,
                         decoder_attention_heads=4, encoder_ffn_dim=64, decoder_ffn_dim=64,
                         vocab_size=VOCAB, max_position_embeddings=64, pad_token_id=0,
                         decoder_start_token_id=0),
    # Vision transformers and CNNs (transformers).
    "vit": hf("ViTConfig", "ViTForImageClassification", image(), hidden_size=32,
              num_hidden_layers=2, num_attention_heads=4, intermediate_size=64, image_size=IMAGE,
              patch_size=8, num_labels=10),
    "deit": hf("DeiTConfig", "DeiTForImageClassification", image(), hidden_size=32,
               num_hidden_layers=2, num_attention_heads=4, intermediate_size=64,
               image_size=IMAGE, patch_size=8, num_labels=10),
    "swin": hf("SwinConfig", "SwinForImageClassification", image(), embed_dim=16, depths=[1, 1],
               num_heads=[2, 4], window_size=2, image_size=IMAGE, patch_size=4, num_labels=10),
    "convnext": hf("ConvNextConfig", "ConvNextForImageClassification", image(),
                   hidden_sizes=[16, 32], depths=[1, 1], num_stages=2, num_labels=10),
    "convnextv2": hf("ConvNextV2Config", "ConvNextV2ForImageClassification", image(),
                     hidden_sizes=[16, 32], depths=[1, 1], num_stages=2, num_labels=10),
    "dinov2": hf("Dinov2Config", "Dinov2Model", image(), field="pooler_output", hidden_size=32, num_hidden_layers=2,
                 num_attention_heads=4, mlp_ratio=2, image_size=IMAGE, patch_size=8),
    "clip_vision": hf("CLIPVisionConfig", "CLIPVisionModel", image(), field="pooler_output", hidden_size=32,
                      num_hidden_layers=2, num_attention_heads=4, intermediate_size=64,
                      image_size=IMAGE, patch_size=8),
    "siglip_vision": hf("SiglipVisionConfig", "SiglipVisionModel", image(), field="pooler_output", hidden_size=32,
                        num_hidden_layers=2, num_attention_heads=4, intermediate_size=64,
                        image_size=IMAGE, patch_size=8),
    "segformer": hf("SegformerConfig", "SegformerForSemanticSegmentation", image(),
                    num_encoder_blocks=2, depths=[1, 1], sr_ratios=[2, 1], hidden_sizes=[16, 32],
                    patch_sizes=[7, 3], strides=[4, 2], num_attention_heads=[1, 2],
                    mlp_ratios=[2, 2], decoder_hidden_size=32, num_labels=5),
    "whisper_encoder": hf("WhisperConfig", "WhisperForAudioClassification",
                          (torch.randn(BATCH, 16, 64),), d_model=32, encoder_layers=2,
                          encoder_attention_heads=4, encoder_ffn_dim=64, num_mel_bins=16,
                          max_source_positions=32, num_labels=4),
    # timm.
    "timm_resnet18": timm_model("resnet18", image(), num_classes=10),
    "timm_efficientnet_b0": timm_model("efficientnet_b0", image(), num_classes=10),
    "timm_vit_tiny": timm_model("vit_tiny_patch16_224", image(), num_classes=10, img_size=IMAGE,
                                patch_size=8, depth=2),
    "timm_mixer": timm_class("mlp_mixer", "MlpMixer", image(), num_classes=10, img_size=IMAGE,
                             patch_size=8, num_blocks=2, embed_dim=32),
    "timm_convnext_atto": timm_model("convnext_atto", image(), num_classes=10),
    "timm_regnetx_002": timm_model("regnetx_002", image(), num_classes=10),
    "timm_resnetv2_bit": (lambda: _bit(), image()),
    # torchvision.
    "tv_resnet18": tv_model("resnet18", image(), num_classes=10),
    "tv_mobilenet_v3_small": tv_model("mobilenet_v3_small", image(), num_classes=10),
    "tv_r3d_18": tv_model("r3d_18", (torch.randn(BATCH, 3, 4, IMAGE, IMAGE),), num_classes=10),
    "tv_shufflenet_v2": tv_model("shufflenet_v2_x0_5", image(), num_classes=10),
    "tv_efficientnet_b0": tv_model("efficientnet_b0", image(), num_classes=10),
    "tv_vit": (lambda: __import__("torchvision").models.VisionTransformer(
        image_size=IMAGE, patch_size=8, num_layers=2, num_heads=2, hidden_dim=32, mlp_dim=64,
        num_classes=10), image()),
    "tv_swin_t": tv_model("swin_t", image(), num_classes=10),
    # Written-out ops the import fusions restore (issue 44).
    "pointnet": (PointNet, (torch.randn(BATCH, 3, 64),)),
    "conformer_conv": (ConformerConv, (torch.randn(BATCH, 32, 24),)),
    "weight_standardisation": (WeightStandardised, image()),
    # Several trained heads: the loss is the sum of one term per output (issue 44).
    "detr_heads": two_heads(DetrHeads, image(), ("logits", "boxes"), ("cross_entropy", "mse")),
    # Third pass (session archs 4): more of today's families.
    "qwen3": hf("Qwen3Config", "Qwen3ForCausalLM", ids(), num_key_value_heads=2, head_dim=8, **LM),
    "starcoder2": hf("Starcoder2Config", "Starcoder2ForCausalLM", ids(), num_key_value_heads=2,
                     **LM),
    "gpt_bigcode": hf("GPTBigCodeConfig", "GPTBigCodeForCausalLM", ids(), n_embd=32, n_layer=2,
                      n_head=4, vocab_size=VOCAB, n_positions=64, multi_query=True),
    "gptj": hf("GPTJConfig", "GPTJForCausalLM", ids(), n_embd=32, n_layer=2, n_head=4,
               rotary_dim=4, vocab_size=VOCAB, n_positions=64),
    "stablelm": hf("StableLmConfig", "StableLmForCausalLM", ids(), num_key_value_heads=2, **LM),
    "albert": hf("AlbertConfig", "AlbertForMaskedLM", ids(), embedding_size=16, **TINY_TEXT),
    "distilbert": hf("DistilBertConfig", "DistilBertForMaskedLM", ids(), dim=32, n_layers=2,
                     n_heads=4, hidden_dim=64, vocab_size=VOCAB, max_position_embeddings=64),
    "xlm_roberta": hf("XLMRobertaConfig", "XLMRobertaForMaskedLM", ids(), **TINY_TEXT),
    "mbart": hf_seq2seq("MBartConfig", "MBartForConditionalGeneration", ids() + ids(),
                        d_model=32, encoder_layers=2, decoder_layers=2,
                        encoder_attention_heads=4, decoder_attention_heads=4, encoder_ffn_dim=64,
                        decoder_ffn_dim=64, vocab_size=VOCAB, max_position_embeddings=64),
    "pegasus": hf_seq2seq("PegasusConfig", "PegasusForConditionalGeneration", ids() + ids(),
                          d_model=32, encoder_layers=2, decoder_layers=2,
                          encoder_attention_heads=4, decoder_attention_heads=4,
                          encoder_ffn_dim=64, decoder_ffn_dim=64, vocab_size=VOCAB,
                          max_position_embeddings=64),
    "beit": hf("BeitConfig", "BeitForImageClassification", image(), hidden_size=32,
               num_hidden_layers=2, num_attention_heads=4, intermediate_size=64, image_size=IMAGE,
               patch_size=8, num_labels=10),
    "mobilevit": hf("MobileViTConfig", "MobileViTForImageClassification", image(),
                    image_size=IMAGE, hidden_sizes=[16, 24, 32], neck_hidden_sizes=[8, 8, 16, 16,
                    24, 32, 64], num_labels=10),
    "hf_resnet": hf("ResNetConfig", "ResNetForImageClassification", image(), embedding_size=16,
                    hidden_sizes=[16, 32], depths=[1, 1], layer_type="basic", num_labels=10),
    "timm_deit_tiny": timm_model("deit_tiny_patch16_224", image(), num_classes=10,
                                 img_size=IMAGE, patch_size=8, depth=2),
    "timm_mobilenetv3": timm_model("mobilenetv3_small_050", image(), num_classes=10),
    "tv_r2plus1d_18": tv_model("r2plus1d_18", (torch.randn(BATCH, 3, 4, IMAGE, IMAGE),),
                               num_classes=10),
    "tv_mc3_18": tv_model("mc3_18", (torch.randn(BATCH, 3, 4, IMAGE, IMAGE),), num_classes=10),
    "tv_mobilenet_v2": tv_model("mobilenet_v2", image(), num_classes=10),
    "tv_squeezenet": tv_model("squeezenet1_1", image(), num_classes=10),
    "tv_regnet_y_400mf": tv_model("regnet_y_400mf", image(), num_classes=10),
    "tv_mnasnet": tv_model("mnasnet0_5", image(), num_classes=10),
    "diffusion_unet": (lambda: TimestepUNet(), (torch.randn(BATCH, 3, 16, 16),
                                                torch.tensor([10, 500]))),
    # Sixth pass (session archs 6): families chosen for the rules they exercise.
    # Speech: a strided conv feature extractor, GroupNorm over time, a grouped, weight-normed
    # positional conv (no SpecAugment masking, no layer drop: both random in training).
    "wav2vec2": hf("Wav2Vec2Config", "Wav2Vec2ForSequenceClassification", audio(), **SPEECH),
    "hubert": hf("HubertConfig", "HubertForSequenceClassification", audio(), **SPEECH),
    # Local (sliding-window) attention, pooled sequences, two-stream relative attention.
    "longformer": hf("LongformerConfig", "LongformerForMaskedLM", ids(), attention_window=4,
                     pad_token_id=1, **TINY_TEXT),
    "funnel": hf("FunnelConfig", "FunnelForMaskedLM", ids(), d_model=32, n_head=4, d_head=8,
                 d_inner=64, block_sizes=[1, 1], num_decoder_layers=1, vocab_size=VOCAB),
    "xlnet": hf("XLNetConfig", "XLNetLMHeadModel", ids(), d_model=32, n_layer=2, n_head=4,
                d_inner=64, vocab_size=VOCAB, use_mems_train=False),
    # A protein LM with rotary positions (a 33-token alphabet).
    "esm": hf("EsmConfig", "EsmForMaskedLM", (torch.randint(4, 29, (BATCH, SEQ)),),
              position_embedding_type="rotary", pad_token_id=1, mask_token_id=32,
              hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64,
              vocab_size=33, max_position_embeddings=64),
    # A sparse MoE with a shared expert.
    "qwen2_moe": hf("Qwen2MoeConfig", "Qwen2MoeForCausalLM", ids(), num_key_value_heads=2,
                    num_experts=4, num_experts_per_tok=2, moe_intermediate_size=32,
                    shared_expert_intermediate_size=64, **LM),
    # Relative position bias (a learned table gathered by a constant index).
    "data2vec_vision": hf("Data2VecVisionConfig", "Data2VecVisionForImageClassification",
                          image(), hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                          intermediate_size=64, image_size=IMAGE, patch_size=8, num_labels=10,
                          use_relative_position_bias=True),
    # Cross attention from learned latents to the inputs.
    "perceiver": hf("PerceiverConfig", "PerceiverForMaskedLM", ids(), d_model=32, d_latents=32,
                    num_latents=8, num_blocks=1, num_self_attends_per_block=1,
                    num_self_attention_heads=4, num_cross_attention_heads=4, vocab_size=VOCAB,
                    max_position_embeddings=SEQ),
    # timm: GRN, fused-MBConv, block and grid attention, EVA's rotary and SwiGLU.
    "timm_convnextv2_atto": timm_model("convnextv2_atto", image(), num_classes=10),
    "timm_efficientnetv2": timm_model("tf_efficientnetv2_b0", image(), num_classes=10),
    "timm_maxvit": timm_model("maxvit_rmlp_pico_rw_256", image(64), num_classes=10,
                              img_size=64),
    "timm_eva02": timm_model("eva02_tiny_patch14_224", image(), num_classes=10, img_size=IMAGE,
                             patch_size=8, depth=2),
    # diffusers' VAE decoder (GroupNorm, mid-block attention, nearest upsampling), trained
    # with MSE on the image it decodes from a 4-channel latent.
    "vae_decoder": (lambda: VaeDecoder(), (torch.randn(BATCH, 4, 8, 8),)),
}


def loss_of(output, labels, kinds=None):
    """memplan's --loss auto: cross entropy over the last axis for rank-2/3 logits, else MSE.
    Several outputs (a tuple, `kinds` naming each one's loss): the sum of their losses, as
    `(l1 + l2).backward()` trains several heads."""
    if isinstance(output, tuple):
        terms = [loss_of(o, l, k) for o, l, k in zip(output, labels, kinds)]
        return sum(terms[1:], terms[0])
    if kinds == "cross_entropy" or (kinds is None and output.dim() in (2, 3)):
        return F.cross_entropy(output.reshape(-1, output.shape[-1]), labels.reshape(-1))
    return F.mse_loss(output, labels)


def labels_for(output, kinds=None):
    if isinstance(output, tuple):
        return tuple(labels_for(o, k) for o, k in zip(output, kinds))
    if kinds == "cross_entropy" or (kinds is None and output.dim() in (2, 3)):
        return torch.randint(0, output.shape[-1], output.shape[:-1])
    return torch.randn_like(output)


class CudaDropout:
    """Dropout as it runs on the GPU, while the rows are measured on the CPU.

    memplan plans the GPU's step. There ATen's dropout takes the fused kernel (Dropout.cpp:
    `is_fused_kernel_acceptable`: a CUDA input, 0 < p < 1, at least one element), native_dropout,
    whose backward keeps a bool mask (1 byte an element). On the CPU the same call takes
    `_dropout_impl`, `input * noise` with a float noise tensor that MulBackward keeps (4 bytes an
    element): measured as is, every dropout would count 3 bytes an element the GPU never holds
    (BERT's rows: 27,648 of the 28,308 bytes memplan missed). Inside this context F.dropout calls
    native_dropout on the CPU too, the GPU's op and saved set."""

    def __enter__(self):
        self.original = F.dropout

        def native(input, p=0.5, training=True, inplace=False):
            if training and 0 < p < 1 and input.numel() > 0:
                return torch.native_dropout(input, p, True)[0]
            return self.original(input, p, training, inplace)
        F.dropout = native
        return self

    def __exit__(self, *exc):
        F.dropout = self.original


class CudaSdpaLayout:
    """Scaled-dot-product attention's output in the memory layout the GPU's fp32 kernel writes.

    memplan plans an fp32 step on the GPU, where F.scaled_dot_product_attention takes the
    memory-efficient kernel (flash needs fp16/bf16): _efficient_attention_forward allocates its
    output fresh as [B, S, H, D] (torch/_meta_registrations.py, meta__efficient_attention_forward:
    torch.empty(B, M, num_heads, Kv)), whatever the query's layout. On the CPU the fp32 call takes
    _scaled_dot_product_flash_attention_for_cpu, whose output follows the query's layout. The two
    differ where the query is not [B, S, H, D] in memory: nn.MultiheadAttention's packed in_proj
    gives [S, B, H, D], so on the GPU its out.permute(2, 0, 1, 3).contiguous() copies the output
    (a tensor out_proj's backward keeps) and on the CPU it is free (tv_vit: 4,352 bytes a layer).
    Inside this context the CPU output is copied into the GPU's layout, as a view of the same
    values: the copy is what the model reads on, the flash kernel keeps its own output."""

    def __enter__(self):
        self.original = F.scaled_dot_product_attention
        original = self.original

        def gpu_layout(*args, **kwargs):
            out = original(*args, **kwargs)
            if out.dim() != 4:
                return out
            return out.transpose(1, 2).contiguous().transpose(1, 2)
        F.scaled_dot_product_attention = gpu_layout
        return self

    def __exit__(self, *exc):
        F.scaled_dot_product_attention = self.original


def measure(model, inputs, kinds=None):
    """Saved bytes (per storage, parameters excluded) and MemTracker's step peak."""
    with CudaDropout(), CudaSdpaLayout():
        return measure_as_on_gpu(model, inputs, kinds)


def measure_as_on_gpu(model, inputs, kinds=None):
    model.train()
    with torch.no_grad():
        labels = labels_for(model(*inputs), kinds)
    # Parameters and module buffers are the model's persistent state, not the step's: autograd
    # saves BatchNorm's running_mean/var and BERT's position_ids table too, but they exist
    # before the step and after it (memplan counts them with the model's bytes).
    params = {t.untyped_storage().data_ptr()
              for t in list(model.parameters()) + list(model.buffers())}
    saved = {}

    def pack(t):
        ptr = t.untyped_storage().data_ptr()
        if ptr not in params:
            saved[ptr] = max(saved.get(ptr, 0), t.untyped_storage().nbytes())
        return t

    torch.manual_seed(0)
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        loss = loss_of(model(*inputs), labels, kinds)
    loss.backward()
    peak = None
    try:
        from torch.distributed._tools.mem_tracker import MemTracker
        optimizer = torch.optim.Adam(model.parameters())
        model.zero_grad(set_to_none=True)
        tracker = MemTracker()
        tracker.track_external(model, optimizer)
        with tracker:
            loss_of(model(*inputs), labels, kinds).backward()
            optimizer.step()
        peak = int(tracker.get_tracker_snapshot("peak")[torch.device("cpu")]["Total"])
    except Exception as error:  # noqa: BLE001 - the peak is optional
        warnings.warn(f"MemTracker: {error}")
    return sum(saved.values()), peak


# Initializers kept inline: integer tensors (axes, shapes, indices the graph computes with) and
# tensors of at most this many elements (scalars the exporters store as initializers).
KEEP_INLINE_ELEMENTS = 64
# The plan the rows are re-predicted with (tools/modern_exporters/repredict.py's default).
DEFAULT_FLAGS = "--gpu 80G --precision fp32 --recompute none"


def strip_weights(path, out_path):
    """The export without its weight bytes: each floating initializer of more than
    KEEP_INLINE_ELEMENTS elements becomes external data in a file that is not kept (memplan reads
    only metadata; a missing data file is fine). As tools/gpu/compare_with_torch.py's, except that
    the dynamo exporter's raw-data constants (ReduceMean's axes, Reshape's shapes) stay inline,
    where the shapes depend on them."""
    import onnx
    model = onnx.load(path, load_external_data=True)
    offset = 0
    for tensor in model.graph.initializer:
        count = 1
        for d in tensor.dims:
            count *= d
        floating = tensor.data_type in (onnx.TensorProto.FLOAT, onnx.TensorProto.FLOAT16,
                                        onnx.TensorProto.BFLOAT16, onnx.TensorProto.DOUBLE)
        if not floating or count <= KEEP_INLINE_ELEMENTS or not tensor.raw_data:
            continue
        size = len(tensor.raw_data)
        tensor.ClearField("raw_data")
        del tensor.external_data[:]
        for key, value in (("location", "weights.bin"), ("offset", str(offset)),
                           ("length", str(size))):
            entry = tensor.external_data.add()
            entry.key, entry.value = key, value
        tensor.data_location = onnx.TensorProto.EXTERNAL
        offset += size
    onnx.save(model, out_path)


# The per-node metadata memplan reads, kept in the stored graphs: the rewriter rules the
# exporter's optimizer applied (a BatchNorm folded into a Conv, graph/folded_batch_norm.h) and the
# module scopes (graph/torch_scoped_names.h).
KEPT_NODE_METADATA = ("pkg.onnxscript.rewriter.rule_name", "pkg.torch.onnx.name_scopes")


def compact(path):
    """The stripped graph without the dynamo exporter's per-node metadata (stack traces, FX nodes)
    other than KEPT_NODE_METADATA, and without doc strings, xz-compressed to PATH.xz: a few KB a
    family. Value metadata (the graph signature's PARAMETER / BUFFER, graph/exported_buffers.h) is
    kept."""
    import lzma

    import onnx
    model = onnx.load(path, load_external_data=False)
    graphs = [model.graph] + [f for f in model.functions]
    for g in graphs:
        for node in g.node:
            kept = [(e.key, e.value) for e in node.metadata_props if e.key in KEPT_NODE_METADATA]
            del node.metadata_props[:]
            for key, value in kept:
                entry = node.metadata_props.add()
                entry.key, entry.value = key, value
            node.doc_string = ""
    with lzma.open(path + ".xz", "wb") as out:
        out.write(model.SerializeToString())
    os.remove(path)


def export(model, inputs, path, exporter, output_names=None):
    model.train()
    args = tuple(inputs)
    if exporter == "torchscript":
        torch.onnx.export(model, args, path, dynamo=False, opset_version=17,
                          training=torch.onnx.TrainingMode.TRAINING, do_constant_folding=False,
                          output_names=output_names)
    else:
        torch.onnx.export(model, args, path, dynamo=True, opset_version=18, external_data=False,
                          optimize=True, output_names=output_names)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="",
                        help="families whose name contains one of these (comma-separated)")
    parser.add_argument("--out", default=os.path.join(ROOT, "tests", "fixtures",
                                                      "modern_exporters"))
    parser.add_argument("--exporters", default="torchscript,dynamo")
    parser.add_argument("--measure-only", action="store_true",
                        help="re-measure torch's bytes of the rows DIR has, keep their graphs")
    parser.add_argument("--export-only", action="store_true",
                        help="export the graphs again, keep the rows' measurements of torch")
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    rows_path = os.path.join(args.out, "rows.jsonl")
    rows = []
    if os.path.exists(rows_path):
        with open(rows_path) as f:
            rows = [json.loads(line) for line in f]
    for name, (build, inputs) in FAMILIES.items():
        if not any(part in name for part in args.only.split(",")):
            continue
        try:
            torch.manual_seed(0)
            model = build()
            if args.export_only:
                kept = [r for r in rows if r["family"] == name]
                if not kept:
                    print(f"{name}: no row to keep the measurement of; measure it first")
                    continue
                saved, peak = kept[0]["torch_saved_bytes"], kept[0]["torch_step_peak_bytes"]
            else:
                saved, peak = measure(model, inputs, getattr(build, "losses", None))
        except Exception as error:  # noqa: BLE001 - a family torch cannot build is a row too
            print(f"{name}: build/measure failed: {type(error).__name__}: {error}")
            continue
        params = sum(p.numel() for p in model.parameters())
        measured = {"torch_saved_bytes": saved, "torch_step_peak_bytes": peak,
                    "torch_parameters": params, "torch": torch.__version__}
        # The attention torch ran: transformers' models are built with eager attention (its
        # graph is what both exporters write), which memplan plans with --attention eager.
        if getattr(build, "attention", None):
            measured["attention"] = build.attention
        # Several trained heads: the plan names every output and its loss.
        if getattr(build, "outputs", None):
            measured["flags"] = (DEFAULT_FLAGS + " --loss-output " + ",".join(build.outputs) +
                                 " --loss " + ",".join(build.losses))
        if args.measure_only:
            for row in rows:
                if row["family"] == name:
                    row.update(measured)
                    print(json.dumps(row), flush=True)
            continue
        for exporter in args.exporters.split(","):
            row = {"family": name, "exporter": exporter, "batch": BATCH, **measured}
            path = os.path.join(args.out, f"{name}.{exporter}.onnx")
            raw = path + ".full"
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    export(model, inputs, raw, exporter, getattr(build, "outputs", None))
                strip_weights(raw, path)
                compact(path)
                row["graph"] = os.path.basename(path) + ".xz"
            except Exception as error:  # noqa: BLE001 - the exporter's failure is the finding
                # The exporter's wrapper error names its step; the cause names the op.
                cause = error
                while cause.__cause__ is not None:
                    cause = cause.__cause__
                lines = (str(cause).strip() or traceback.format_exc()).splitlines()
                row["export_error"] = f"{type(cause).__name__}: {lines[0][:300]}"
            finally:
                for leftover in (raw, raw + ".data"):
                    if os.path.exists(leftover):
                        os.remove(leftover)
            rows = [r for r in rows if (r["family"], r["exporter"]) != (name, exporter)]
            rows.append(row)
            print(json.dumps(row), flush=True)
    rows.sort(key=lambda r: (r["family"], r["exporter"]))
    with open(rows_path, "w") as f:
        for row in rows:
            f.write(json.dumps(row, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
