# SPDX-License-Identifier: GPL-3.0-or-later
"""Measures the exported folder on held-out dates (never seen in training, in any format).

Usage: python3 evaluate.py MODEL_DIR [--attnviz BIN] [--per-format N] [--compare N] [--json OUT]
                           [--expected FIXTURE]

- exact: greedy decoding in torch (t5.py on the folder's model.safetensors) of N held-out dates per
  format (dates.held_out_set), each in a drawn case; the share converted exactly, per format and case.
- attnviz: with --attnviz, `attnviz generate --json` on the first --compare dates of every format;
  its generated ids (</s> included) must equal torch's.
- alignment: teacher-forced on the ISO target, for each output digit (YYYY, MM, DD: 8 per date) the
  cross-attention row of the decoder step that emits it (the row whose input is the previous target
  token), averaged over heads: does its largest weight fall on a source character of the digit's
  field (year, month, day)? The share per decoder layer and per (layer, head), and per format in
  the best layer.
- FIXTURE (tests/fixtures/models/attnviz-dates-expected.json): two held-out dates per format with
  their source ids, each source token's field and torch's greedy ids; fifty held-out dates per
  format with their targets and fields, and on those the count of digits per layer whose row
  peaks on their field; the held-out numbers above. For tst_bundleddates.
"""
import argparse
import json
import os
import struct
import subprocess
import sys

import numpy as np
import sentencepiece as spm
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import dates  # noqa: E402
import t5  # noqa: E402
import train  # noqa: E402

DIGITS = {0: "year", 1: "year", 2: "year", 3: "year", 5: "month", 6: "month", 8: "day", 9: "day"}


def load(folder):
    config = json.load(open(os.path.join(folder, "config.json")))
    raw = open(os.path.join(folder, "model.safetensors"), "rb").read()
    n = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8:8 + n])
    sd = {}
    for name, h in header.items():
        if name == "__metadata__":
            continue
        a, b = h["data_offsets"]
        assert h["dtype"] == "F32"
        sd[name] = torch.from_numpy(np.frombuffer(raw[8 + n + a:8 + n + b], dtype="<f4").reshape(h["shape"]).copy())
    model = t5.T5(config)
    model.load_state_dict(sd)
    model.eval()
    return model, config


def greedy_ids(model, sp, examples, chunk=200):
    out = []
    for i in range(0, len(examples), chunk):
        src, mask, _, _ = train.batch(sp, examples[i:i + chunk])
        for row in model.greedy(src, mask, max_new=12).tolist():
            out.append(row[:row.index(1) + 1] if 1 in row else row)
    return out


@torch.no_grad()
def alignment(model, sp, examples, chunk=200):
    """hits[layer][head or 'mean'] -> list of booleans, one per output digit, in example order."""
    L, H = model.c["num_decoder_layers"], model.c["num_heads"]
    hits = [[[] for _ in range(H + 1)] for _ in range(L)]
    for i in range(0, len(examples), chunk):
        part = examples[i:i + chunk]
        src, mask, dec_in, _ = train.batch(sp, part)
        cross = []
        model.decode(model.encode(src, mask), dec_in, mask, cross)
        for b, e in enumerate(part):
            fields = e[4] + ["other"]  # </s>
            for l in range(L):
                w = cross[l][b]  # (H, T, S)
                for t, want in DIGITS.items():
                    for h in range(H + 1):
                        row = w[:, t].mean(0) if h == H else w[h, t]
                        hits[l][h].append(fields[int(row[:len(fields)].argmax())] == want)
    return hits


def run_attnviz(binary, text):
    out = subprocess.run([binary, "generate", "--model", MODEL, "--text", text, "--json", "--max-new", "12"],
                         capture_output=True, text=True, check=True, env=dict(os.environ, QT_QPA_PLATFORM="offscreen"))
    return json.loads(out.stdout)["generated"]


def main():
    global MODEL
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("--attnviz")
    ap.add_argument("--per-format", type=int, default=400)
    ap.add_argument("--compare", type=int, default=10)
    ap.add_argument("--json")
    ap.add_argument("--expected")
    a = ap.parse_args()
    MODEL = a.model
    torch.set_num_threads(1)
    model, config = load(a.model)
    sp = spm.SentencePieceProcessor(model_file=os.path.join(a.model, "spiece.model"))
    held = dates.held_out_set(per_format=a.per_format)
    ids = greedy_ids(model, sp, held)
    ok = [sp.decode([t for t in r if t != 1]) == e[3] for r, e in zip(ids, held)]
    res = {"examples": len(held), "exact": sum(ok) / len(ok), "per_format": {}, "per_case": {}}
    for key, idx in (("per_format", 0), ("per_case", 1)):
        for k in dict.fromkeys(e[idx] for e in held):
            sel = [o for o, e in zip(ok, held) if e[idx] == k]
            res[key][k] = [sum(sel), len(sel)]
    res["wrong"] = [[e[2], sp.decode([t for t in r if t != 1])] for o, e, r in zip(ok, held, ids) if not o][:20]
    hits = alignment(model, sp, held)
    L, H = len(hits), len(hits[0]) - 1
    res["alignment_per_layer"] = [sum(hits[l][H]) / len(hits[l][H]) for l in range(L)]
    res["alignment_per_head"] = [[sum(hits[l][h]) / len(hits[l][h]) for h in range(H)] for l in range(L)]
    best = int(np.argmax(res["alignment_per_layer"]))
    res["best_layer"] = best
    per = {}
    for j, e in enumerate(held):
        s = per.setdefault(e[0], [0, 0])
        s[0] += sum(hits[best][H][j * 8:(j + 1) * 8])
        s[1] += 8
    res["alignment_best_layer_per_format"] = per
    if a.attnviz:
        same, n = 0, 0
        for fmt in dates.FORMATS:
            for j in [j for j, e in enumerate(held) if e[0] == fmt][:a.compare]:
                same += run_attnviz(a.attnviz, held[j][2]) == ids[j]
                n += 1
        res["attnviz_equal_ids"] = [same, n]
    print(json.dumps(res, indent=1))
    if a.json:
        json.dump(res, open(a.json, "w"), indent=1)
    if a.expected:
        cases = []
        for fmt in dates.FORMATS:
            for j in [j for j, e in enumerate(held) if e[0] == fmt][:2]:
                e = held[j]
                cases.append({"format": e[0], "case": e[1], "text": e[2], "target": e[3],
                              "source_ids": sp.encode(e[2]) + [1], "fields": e[4] + ["other"], "generated": ids[j]})
        # 50 held-out dates of each format for the alignment (their targets and each character's field,
        # one letter a character: y, m, d, o = other)
        more = [e for fmt in dates.FORMATS for e in [x for x in held if x[0] == fmt][:50]]
        sub = alignment(model, sp, more)
        doc = {"model": "attnviz-dates", "computed_by": "resources/models/attnviz-dates/recipe/evaluate.py (torch)",
               "digit_fields": {str(k): v for k, v in DIGITS.items()},
               "cases": cases,
               "alignment_cases": [{"text": e[2], "target": e[3], "fields": "".join(f[0] for f in e[4])} for e in more],
               "alignment_per_layer": [sum(sub[l][H]) for l in range(L)],
               "heldout": {k: res[k] for k in ("examples", "exact", "per_format", "alignment_per_layer", "best_layer")}}
        with open(a.expected, "w") as f:
            json.dump(doc, f, indent=1)
            f.write("\n")


if __name__ == "__main__":
    main()
