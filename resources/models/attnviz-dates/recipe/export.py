# SPDX-License-Identifier: GPL-3.0-or-later
"""Writes the model folder: train.py's ckpt.npz + tokenizer.py's spiece.model -> a Hugging Face T5 folder.

Usage: python3 export.py CKPT.npz SPIECE.model OUTDIR

OUTDIR gets config.json (T5Config's keys), model.safetensors (F32, HF's tensor names, no lm_head:
tied to `shared`; written by hand, header sorted by name, metadata {"format": "pt", "step": "N"}),
spiece.model and tokenizer_config.json (T5Tokenizer's).
"""
import json
import os
import shutil
import struct
import sys

import numpy as np


def save_safetensors(path, tensors, metadata):
    header, off = {}, 0
    for name in sorted(tensors):
        a = tensors[name]
        n = a.size * 4
        header[name] = {"dtype": "F32", "shape": list(a.shape), "data_offsets": [off, off + n]}
        off += n
    header["__metadata__"] = metadata
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for name in sorted(tensors):
            f.write(np.ascontiguousarray(tensors[name], dtype="<f4").tobytes())


def main():
    if len(sys.argv) != 4:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    ckpt, spiece, out = sys.argv[1:]
    z = np.load(ckpt)
    config = json.loads(str(z["config"]))
    tensors = {n[2:]: z[n] for n in z.files if n.startswith("w/")}
    assert "lm_head.weight" not in tensors and config["tie_word_embeddings"]
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
        f.write("\n")
    save_safetensors(os.path.join(out, "model.safetensors"), tensors, {"format": "pt", "step": str(int(z["step"]))})
    shutil.copyfile(spiece, os.path.join(out, "spiece.model"))
    with open(os.path.join(out, "tokenizer_config.json"), "w") as f:
        json.dump({"tokenizer_class": "T5Tokenizer", "eos_token": "</s>", "unk_token": "<unk>", "pad_token": "<pad>",
                   "extra_ids": 0, "additional_special_tokens": [], "model_max_length": 64, "legacy": True}, f, indent=2)
        f.write("\n")
    print(f"export.py: {out} from step {int(z['step'])}", file=sys.stderr)


if __name__ == "__main__":
    main()
