# SPDX-License-Identifier: GPL-3.0-or-later
"""Writes the model folder: train.py's model.pt + the BPE files -> a Hugging Face GPT-2 folder.

Usage: python3 export.py MODEL_PT TOKENIZER_DIR OUTDIR

OUTDIR gets config.json (GPT2Config's keys), model.safetensors (F32, GPT-2's tensor names without
the "transformer." prefix, Conv1D layout, no lm_head: the head is wte, tied), vocab.json and
merges.txt (copied). The safetensors metadata records {"format": "pt", "step": N}.
"""
import json
import os
import shutil
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpt2  # noqa: E402


def main():
    if len(sys.argv) != 4:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    ckpt, tokdir, out = sys.argv[1:]
    state = torch.load(ckpt, map_location="cpu")
    os.makedirs(out, exist_ok=True)
    tensors = dict(state["state"])
    assert "lm_head.weight" not in tensors
    gpt2.save_safetensors(os.path.join(out, "model.safetensors"), tensors,
                          {"format": "pt", "step": str(state["step"])})
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(gpt2.hf_config(state["cfg"]), f, indent=2)
        f.write("\n")
    for name in ("vocab.json", "merges.txt"):
        shutil.copyfile(os.path.join(tokdir, name), os.path.join(out, name))
    n = sum(t.numel() for t in tensors.values())
    print(f"export: step {state['step']}, {len(tensors)} tensors, {n} parameters -> {out}", file=sys.stderr)


if __name__ == "__main__":
    main()
