# SPDX-License-Identifier: GPL-3.0-or-later
"""Writes the model folder: train.py's ckpt.npz + attnviz-tiny's BPE files -> a Hugging Face Llama folder.

Usage: python3 export.py CKPT.npz OUTDIR

OUTDIR gets config.json (LlamaConfig's keys), model.safetensors (BF16, HF's tensor names, no
lm_head: the head is the token embeddings, tied), tokenizer.json (the byte-level BPE of
attnviz-tiny's vocab.json and merges.txt in the `tokenizers` library's format, with a template that
puts <|endoftext|> first as BOS) and tokenizer_config.json. The safetensors metadata records
{"format": "pt", "step": N}.
"""
import json
import os
import sys

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import llama  # noqa: E402
import probes  # noqa: E402

BOS_TEXT = "<|endoftext|>"


def tokenizer_json(vocab, merges, bos):
    byte_level = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True}
    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [{"id": bos, "content": BOS_TEXT, "single_word": False, "lstrip": False, "rstrip": False,
                          "normalized": False, "special": True}],
        "normalizer": None,
        "pre_tokenizer": byte_level,
        "post_processor": {
            "type": "TemplateProcessing",
            "single": [{"SpecialToken": {"id": BOS_TEXT, "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
            "pair": [{"SpecialToken": {"id": BOS_TEXT, "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                     {"SpecialToken": {"id": BOS_TEXT, "type_id": 1}}, {"Sequence": {"id": "B", "type_id": 1}}],
            "special_tokens": {BOS_TEXT: {"id": BOS_TEXT, "ids": [bos], "tokens": [BOS_TEXT]}},
        },
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
                  "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False, "ignore_merges": False,
                  "vocab": vocab, "merges": merges},
    }


def main():
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    ckpt, out = sys.argv[1:]
    z = np.load(ckpt)
    step = int(z["step"])
    tensors = {n[2:]: torch.from_numpy(z[n]) for n in z.files if n.startswith("w/")}
    assert "lm_head.weight" not in tensors
    with open(os.path.join(probes.TOKENIZER_DIR, "vocab.json"), encoding="utf-8") as f:
        vocab = json.load(f)
    with open(os.path.join(probes.TOKENIZER_DIR, "merges.txt"), encoding="utf-8") as f:
        merges = [l for l in f.read().split("\n")[1:] if l]
    bos = vocab[BOS_TEXT]
    e = tensors["model.embed_tokens.weight"].shape
    layers = 1 + max(int(n.split(".")[2]) for n in tensors if n.startswith("model.layers."))
    q = tensors["model.layers.0.self_attn.q_proj.weight"].shape
    k = tensors["model.layers.0.self_attn.k_proj.weight"].shape
    cfgrun = json.load(open(os.path.join(os.path.dirname(ckpt), "config.json")))["cfg"]
    assert (cfgrun["vocab_size"], cfgrun["hidden_size"], cfgrun["num_hidden_layers"]) == (e[0], e[1], layers)
    assert cfgrun["num_attention_heads"] * cfgrun["head_dim"] == q[0] and cfgrun["num_key_value_heads"] * cfgrun["head_dim"] == k[0]
    os.makedirs(out, exist_ok=True)
    llama.save_safetensors_bf16(os.path.join(out, "model.safetensors"), tensors, {"format": "pt", "step": str(step)})
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(cfgrun, f, indent=2)
        f.write("\n")
    with open(os.path.join(out, "tokenizer.json"), "w", encoding="utf-8") as f:
        json.dump(tokenizer_json(vocab, merges, bos), f, ensure_ascii=False, separators=(",", ":"))
    with open(os.path.join(out, "tokenizer_config.json"), "w") as f:
        json.dump({"tokenizer_class": "PreTrainedTokenizerFast", "bos_token": BOS_TEXT, "eos_token": BOS_TEXT,
                   "add_bos_token": True, "add_eos_token": False,
                   "model_max_length": cfgrun["max_position_embeddings"], "clean_up_tokenization_spaces": False},
                  f, indent=2)
        f.write("\n")
    n = sum(t.numel() for t in tensors.values())
    print(f"export: step {step}, {len(tensors)} tensors, {n} parameters -> {out}", file=sys.stderr)


if __name__ == "__main__":
    main()
