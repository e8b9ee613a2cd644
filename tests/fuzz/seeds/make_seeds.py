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

# GGUF tokenizers (fuzz_gguf_tokenizer): each fixture's tokenizer.ggml.* metadata with no tensors
# (general.architecture kept), then the hostile shapes shrunk to seed size: a SentencePiece token of
# 20,000 bytes, arrays that claim 1.5e9 uint8 or 1e8 empty arrays the file does not hold, and keys
# of the wrong type (add_bos_token the string "true", tokenizer.ggml.pre a uint32).
GGUF_SCALAR = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}


def gguf_value(b, o, t):
    if t in GGUF_SCALAR:
        fmt = "<" + GGUF_SCALAR[t]
        return b[o:o + struct.calcsize(fmt)], o + struct.calcsize(fmt)
    if t == 8:
        n = struct.unpack_from("<Q", b, o)[0]
        return b[o:o + 8 + n], o + 8 + n
    if t == 9:
        et, n = struct.unpack_from("<IQ", b, o)
        p = o + 12
        for _ in range(n):
            _, p = gguf_value(b, p, et)
        return b[o:p], p
    raise ValueError("GGUF value type %d" % t)


def gguf_metadata(path):
    """(key, type, raw value bytes) of a GGUF file's metadata, in file order."""
    with open(path, "rb") as f:
        b = f.read()
    assert b[:4] == b"GGUF"
    _, _, n_kv = struct.unpack_from("<IQQ", b, 4)
    o, out = 24, []
    for _ in range(n_kv):
        n = struct.unpack_from("<Q", b, o)[0]
        key = b[o + 8:o + 8 + n].decode()
        t = struct.unpack_from("<I", b, o + 8 + n)[0]
        raw, o = gguf_value(b, o + 12 + n, t)
        out.append((key, t, raw))
    return out


def gguf_bytes(kvs):
    b = b"GGUF" + struct.pack("<IQQ", 3, 0, len(kvs))
    for key, t, raw in kvs:
        b += struct.pack("<Q", len(key)) + key.encode() + struct.pack("<I", t) + raw
    return b


def gguf_str(s):
    s = s.encode() if isinstance(s, str) else s
    return struct.pack("<Q", len(s)) + s


tokenizer_kvs = {}
for name in ("gpt2", "llama", "qwen2", "qwen3", "gemma2", "gemma3", "phi3"):
    kvs = [kv for kv in gguf_metadata(os.path.join(FIX, "gguf", name + ".gguf"))
           if kv[0] == "general.architecture" or kv[0].startswith("tokenizer.")]
    tokenizer_kvs[name] = kvs
    write("gguf_tokenizer", name + ".gguf", gguf_bytes(kvs))


def replaced(kvs, key, t, raw):
    return [(k, t, raw) if k == key else (k, kt, kraw) for k, kt, kraw in kvs]


# A: the last token of the SentencePiece vocabulary 20,000 bytes long
sp = tokenizer_kvs["gemma3"]
tokens = dict((k, raw) for k, _, raw in sp)["tokenizer.ggml.tokens"]
et, n = struct.unpack_from("<IQ", tokens, 0)
items, p = [], 12
for _ in range(n):
    raw, p = gguf_value(tokens, p, 8)
    items.append(raw)
items[-1] = gguf_str("\u2581" + "a" * 20000)
write("gguf_tokenizer", "a-long-token.gguf", gguf_bytes(replaced(sp, "tokenizer.ggml.tokens", 9,
                                                               struct.pack("<IQ", 8, n) + b"".join(items))))
# B: arrays larger than the file (a key nothing reads, and the token types)
write("gguf_tokenizer", "b-huge-uint8.gguf",
      gguf_bytes(tokenizer_kvs["gpt2"] + [("general.junk", 9, struct.pack("<IQ", 0, 1500000000) + b"\0" * 64)]))
write("gguf_tokenizer", "b-empty-arrays.gguf",
      gguf_bytes(replaced(tokenizer_kvs["llama"], "tokenizer.ggml.token_type", 9,
                          struct.pack("<IQ", 9, 100000000) + struct.pack("<IQ", 5, 0) * 4)))
# H: keys of the wrong type
write("gguf_tokenizer", "h-bos-string.gguf",
      gguf_bytes(replaced(tokenizer_kvs["llama"], "tokenizer.ggml.add_bos_token", 8, gguf_str("true"))))
write("gguf_tokenizer", "h-pre-uint32.gguf",
      gguf_bytes(replaced(tokenizer_kvs["qwen2"], "tokenizer.ggml.pre", 4, struct.pack("<I", 7))))

# tokenizer.json pipelines (fuzz_hf_pipeline): "normalizer \0 pre_tokenizer \0 text" from each
# fixture's tokenizer.json, then the hostile ones shrunk: 2,000 empty groups, a back-reference,
# 60 doubling Replaces, a Replace by 30,000 characters, 1,000 Prepends.
TEXT = "The theory's 12 caf\u00e9s \u4e2d\u6587  \t\n<s> hello  world"


def pipeline(normalizer, pre, text=TEXT):
    part = lambda v: b"" if v is None else json.dumps(v, ensure_ascii=False).encode()
    return part(normalizer) + b"\0" + part(pre) + b"\0" + text.encode()


for name in ("llama3-gpt2", "mistral", "qwen3"):
    with open(os.path.join(FIX, "tokenizers", name, "tokenizer.json"), encoding="utf-8") as f:
        t = json.load(f)
    write("hf_pipeline", name, pipeline(t.get("normalizer"), t.get("pre_tokenizer")))
split = lambda pattern: {"type": "Split", "pattern": {"Regex": pattern}, "behavior": "Isolated"}
write("hf_pipeline", "d-empty-groups", pipeline(None, split("()" * 2000 + "x")))
write("hf_pipeline", "d-back-reference", pipeline(None, split("(.+)\\1+x"), "ab" * 2500))
write("hf_pipeline", "d-nested-plus", pipeline(None, split("(a+)+$"), "a" * 64 + "b"))
seq = lambda items: {"type": "Sequence", "normalizers": items}
write("hf_pipeline", "e-doublings",
      pipeline(seq([{"type": "Replace", "pattern": {"String": "a"}, "content": "aa"}] * 60), None, "a b a"))
write("hf_pipeline", "e-replace-large",
      pipeline({"type": "Replace", "pattern": {"String": "a"}, "content": "b" * 30000}, None, "a" * 40))
write("hf_pipeline", "e-prepends", pipeline(seq([{"type": "Prepend", "prepend": "a"}] * 1000), None, "x"))

# GGUF layouts ggml refuses (fuzz_gguf), from the smallest fixture: G1 a 64-byte gap before the first
# tensor's data (every offset moved by 64), G2 a tensor count one short of the infos written (each
# tensor then read where the one before it lies).
def gguf_tensor_offsets(b):
    """Positions of the tensor infos' offset fields, and where the data section starts."""
    _, n_t, n_kv = struct.unpack_from("<IQQ", b, 4)
    o, alignment = 24, 32
    for _ in range(n_kv):
        n = struct.unpack_from("<Q", b, o)[0]
        key = b[o + 8:o + 8 + n].decode()
        t = struct.unpack_from("<I", b, o + 8 + n)[0]
        raw, o = gguf_value(b, o + 12 + n, t)
        if key == "general.alignment":
            alignment = struct.unpack_from("<I", raw)[0]
    fields = []
    for _ in range(n_t):
        n = struct.unpack_from("<Q", b, o)[0]
        dims = struct.unpack_from("<I", b, o + 8 + n)[0]
        o += 8 + n + 4 + 8 * dims + 4
        fields.append(o)
        o += 8
    return fields, (o + alignment - 1) // alignment * alignment


with open(os.path.join(FIX, "gguf", "qwen3.gguf"), "rb") as f:
    qwen3 = bytearray(f.read())
fields, data_start = gguf_tensor_offsets(qwen3)
gap = bytearray(qwen3)
for p in fields:
    struct.pack_into("<Q", gap, p, struct.unpack_from("<Q", gap, p)[0] + 64)
write("gguf", "g-gap-before-first-tensor.gguf", bytes(gap[:data_start]) + b"\0" * 64 + bytes(gap[data_start:]))
short = bytearray(qwen3)
struct.pack_into("<Q", short, 8, struct.unpack_from("<Q", short, 8)[0] - 1)
write("gguf", "g-count-one-short.gguf", bytes(short))

# F (fuzz_hftokenizer, first byte 0: a tokenizer.json): the trimmed Qwen 3 file with 250 added tokens
# of 80 characters each, and with 3,000 more vocabulary entries than its merges reach.
with open(os.path.join(HERE, "hftokenizer", "qwen3_small"), "rb") as f:
    q3 = json.loads(f.read()[1:])
many = dict(q3)
next_id = max(list(q3["model"]["vocab"].values()) + [t["id"] for t in q3["added_tokens"]]) + 1
many["added_tokens"] = q3["added_tokens"] + [
    {"id": next_id + i, "content": "<|added_%03d|" % i + "x" * 66 + "|>", "single_word": False, "lstrip": False,
     "rstrip": False, "normalized": False, "special": i % 2 == 0} for i in range(250)]
compact = lambda v: json.dumps(v, ensure_ascii=False, separators=(",", ":")).encode()
write("hftokenizer", "f-many-added-tokens", b"\0" + compact(many))
wide = json.loads(json.dumps(q3))
for i in range(3000):
    wide["model"]["vocab"]["w%04d" % i] = next_id + i
write("hftokenizer", "f-wide-vocabulary", b"\0" + compact(wide))
