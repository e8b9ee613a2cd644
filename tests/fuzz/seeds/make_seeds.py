#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-3.0-or-later
# Writes the small seed inputs of the fuzz targets that tests/fixtures has no small file for:
# a word2vec .bin, an .avec, a text table with a "count dim" header, a GPT-2-shaped safetensors
# file, a projections JSON and a session. Standard library only; run from anywhere:
#   python3 tests/fuzz/seeds/make_seeds.py
import json
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
WORDS = ["the", "ship", "crew", "my"]
DIM = 4


def vec(i):
    return [round(0.25 * ((i * 7 + k * 3) % 9 - 4), 2) for k in range(DIM)]


def write(folder, name, data):
    os.makedirs(os.path.join(HERE, folder), exist_ok=True)
    with open(os.path.join(HERE, folder, name), "wb") as f:
        f.write(data)


# word2vec binary: "count dim\n", then "word " + dim float32 + "\n" per word
b = b"%d %d\n" % (len(WORDS), DIM)
for i, w in enumerate(WORDS):
    b += w.encode() + b" " + struct.pack("<%df" % DIM, *vec(i)) + b"\n"
write("word2vec_bin", "toy4.bin", b)

# .avec (embeddings.h): "AVEC" u32 version u32 count u32 dim u32 flags, words, (f32 scale, i8 x dim)
a = b"AVEC" + struct.pack("<4I", 1, len(WORDS), DIM, 0)
for w in WORDS:
    a += bytes([len(w)]) + w.encode()
for i in range(len(WORDS)):
    v = vec(i)
    scale = max(abs(x) for x in v) / 127 or 1.0
    a += struct.pack("<f", scale) + struct.pack("<%db" % DIM, *[round(x / scale) for x in v])
write("avec", "toy4.avec", a)

# text with a word2vec / fastText header
t = "%d %d\n" % (len(WORDS), DIM) + "".join(w + "".join(" %g" % x for x in vec(i)) + "\n" for i, w in enumerate(WORDS))
write("vectors_text", "toy4.vec", t.encode())

# safetensors: one GPT-2 block of width 2 (transformer.h: stackWeightsFromGpt2)
d = 2
shapes = {
    "h.0.attn.c_attn.weight": [d, 3 * d], "h.0.attn.c_attn.bias": [3 * d],
    "h.0.attn.c_proj.weight": [d, d], "h.0.attn.c_proj.bias": [d],
    "h.0.mlp.c_fc.weight": [d, 4 * d], "h.0.mlp.c_fc.bias": [4 * d],
    "h.0.mlp.c_proj.weight": [4 * d, d], "h.0.mlp.c_proj.bias": [d],
    "h.0.ln_1.weight": [d], "h.0.ln_1.bias": [d], "h.0.ln_2.weight": [d], "h.0.ln_2.bias": [d],
    "wpe.weight": [3, d], "ln_f.weight": [d], "ln_f.bias": [d],
}
header, data = {"__metadata__": {"format": "pt"}}, b""
for name, shape in shapes.items():
    n = 1
    for s in shape:
        n *= s
    header[name] = {"dtype": "F32", "shape": shape, "data_offsets": [len(data), len(data) + 4 * n]}
    data += struct.pack("<%df" % n, *[0.1 * ((k % 5) - 2) for k in range(n)])
h = json.dumps(header, separators=(",", ":")).encode()
write("safetensors", "gpt2-d2.safetensors", struct.pack("<Q", len(h)) + h + data)

# projections JSON (ui/livecompute.cpp loadProjectionsFile): W_* (rows = out, cols = in), b_*
eye = [[1.0 if r == c else 0.0 for c in range(DIM)] for r in range(DIM)]
proj = {"W_q": eye, "b_q": [0.0] * DIM, "W_k": eye, "W_v": eye, "W_o": eye, "b_o": [0.5] * DIM}
write("projections", "identity4.json", json.dumps(proj).encode())

# a session (README "Session files")
session = {
    "format": "attnviz-session", "version": 1, "app": "attnviz 0.1.0",
    "input": {"sentence": "the ship and the crew", "keySentence": "", "paddedKeys": [1], "customMask": [[0, 1]]},
    "settings": {"numHeads": 2, "dHead": 0, "scaleRule": "1/sqrt(d_head)", "temperature": 1,
                 "normalization": "softmax", "mask": "causal", "maskMethod": "neg_inf", "projection": "random",
                 "projectionSeed": 3, "dropout": 0, "dropoutSeed": 0, "backend": "cpu",
                 "stack": {"depth": 2, "source": "seed", "seed": 1}},
    "table": {"kind": "seed", "name": "journey"},
    "projectionsFile": None, "stackWeightsFile": None,
    "view": {"tab": "weights", "headDisplay": "one", "selectedHead": 0, "selectedQuery": 1, "layer": 0,
             "showNumbers": True, "linesThreshold": 0.1, "linesScaleRows": False},
    "appearance": {"theme": "dark", "weightsMap": "viridis", "signedMap": "rdbu", "textScale": 1.0},
    "compare": {"sentence": "my crew", "keySentence": "", "settings": {"numHeads": 1}, "seedTable": "bloem"},
    "lesson": "",
}
write("session", "lesson.attnviz", json.dumps(session, indent=1).encode())

# Model folders (tests/fixtures/models): the small files of each, as seeds of the model-folder
# targets; the large ones (GPT-2's 1 MB vocab.json, BERT's 30,522-line vocab.txt) cut down to a
# vocabulary that still parses: the 256 byte symbols and the tokens of GPT-2's first 200 merges,
# and BERT's first 1,200 lines (the specials and the first words).
FIX = os.path.join(HERE, "..", "..", "fixtures")
for model in ["gpt2-tiny", "bert-tiny", "distilbert-tiny"]:
    with open(os.path.join(FIX, "models", model, "config.json"), "rb") as f:
        write("model_config", model + ".json", f.read())
for model in ["bert-tiny", "distilbert-tiny"]:
    with open(os.path.join(FIX, "models", model, "tokenizer_config.json"), "rb") as f:
        write("tokenizer_config", model + ".json", f.read())
write("tokenizer_config", "options.json",
      json.dumps({"do_lower_case": False, "strip_accents": True, "tokenize_chinese_chars": False}).encode())
with open(os.path.join(FIX, "models", "gpt2-tiny", "model.safetensors"), "rb") as f:
    n = struct.unpack("<Q", f.read(8))[0]
    names = [k for k in json.loads(f.read(n)) if k != "__metadata__"]
write("model_index", "gpt2-tiny.index.json", json.dumps(
    {"metadata": {"total_size": 0}, "weight_map": {k: "model-00001-of-00001.safetensors" for k in sorted(names)}},
    indent=2).encode())
with open(os.path.join(FIX, "tokenizers", "gpt2", "vocab.json"), encoding="utf-8") as f:
    gpt2 = json.load(f)
with open(os.path.join(FIX, "tokenizers", "gpt2", "merges.txt"), encoding="utf-8") as f:
    merges = [line.rstrip("\n") for line in f if line.strip() and not line.startswith("#")][:200]
small = [t for t, _ in sorted(gpt2.items(), key=lambda kv: kv[1])[:256]]
for m in merges:
    a, b = m.split(" ")
    for t in (a, b, a + b):
        if t not in small:
            small.append(t)
write("vocab_json", "gpt2-small.json", json.dumps({t: i for i, t in enumerate(small)}, ensure_ascii=False).encode())
write("merges_txt", "gpt2-200.txt", ("#version: 0.2\n" + "\n".join(merges) + "\n").encode())
with open(os.path.join(FIX, "tokenizers", "bert-base-uncased", "vocab.txt"), "rb") as f:
    write("vocab_txt", "bert-1200.txt", b"".join(f.readlines()[:1200]))

# Ollama manifests (modelstores.h: parseOllamaManifest): a model with its template and params
# layers as `ollama pull` writes it, and one of a namespace's model with a projector layer.
def ollama_layer(media, content):
    import hashlib
    return {"mediaType": "application/vnd.ollama.image." + media,
            "digest": "sha256:" + hashlib.sha256(content).hexdigest(), "size": len(content)}


manifest = {"schemaVersion": 2, "mediaType": "application/vnd.docker.distribution.manifest.v2+json",
            "config": {"mediaType": "application/vnd.docker.container.image.v1+json",
                       "digest": "sha256:" + "0" * 64, "size": 487},
            "layers": [ollama_layer("model", b"GGUF\x03\x00\x00\x00"), ollama_layer("template", b"{{ .Prompt }}"),
                       ollama_layer("params", b'{"stop":["<|im_end|>"]}')]}
write("ollama_manifest", "tiny-latest.json", json.dumps(manifest).encode())
manifest["layers"].insert(1, ollama_layer("projector", b"GGUF\x03\x00\x00\x00clip"))
write("ollama_manifest", "vision-q4.json", json.dumps(manifest, indent=2).encode())
