# SPDX-License-Identifier: GPL-3.0-or-later
"""Measures the attnviz-tiny 2 folder: the MANIFEST's numbers, as JSON and Markdown tables.

Usage: python3 evaluate.py MODEL_DIR DATA [--json OUT.json]

Everything runs in float64 on the shipped weights (model.safetensors, BF16 widened exactly):
- held-out loss: every held-out block's first 255 tokens after BOS; tokens 1..254 of each scored
  (the first token after BOS has no bigram context), beside attnviz-tiny's unigram and bigram
  baselines on the same predictions (the bigram's lambda picked on this text: flattering it);
- probes.py's measurements on text the training never saw: previous-token, first-token (sink) per
  head on 32 held-out windows; induction on fifty common words said twice; the ten natural
  sentences said twice (top-1 and probability of the copied word);
- the numpy reference forward (llama.Reference) against the torch module, both float64.
"""
import argparse
import json
import math
import os
import sys

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "attnviz-tiny", "recipe"))
import llama  # noqa: E402
import probes  # noqa: E402

BOS = 4095


def load_model(folder):
    ref = llama.Reference(folder)
    model = llama.Llama(ref.cfg).double()
    model.load_state_dict({k: torch.from_numpy(v) for k, v in ref.w.items()}, strict=True)
    model.eval()
    return model, ref


def baselines(train, prev, nxt, vocab):
    uni = np.bincount(train, minlength=vocab).astype(np.float64)
    p_uni = (uni + 1) / (uni.sum() + vocab)
    pair = train[:-1] * vocab + train[1:]
    keys, counts = np.unique(pair, return_counts=True)
    q = prev * vocab + nxt
    pos = np.minimum(np.searchsorted(keys, q), len(keys) - 1)
    c_pair = np.where(keys[pos] == q, counts[pos], 0).astype(np.float64)
    p_ml = np.where(uni[prev] > 0, c_pair / np.maximum(uni[prev], 1), 0.0)
    best = min((float(-np.mean(np.log(lam * p_ml + (1 - lam) * p_uni[nxt]))), lam)
               for lam in (0.5, 0.6, 0.7, 0.8, 0.85, 0.9, 0.95))
    return float(-np.mean(np.log(p_uni[nxt]))), best[0], best[1]


def table(name, m):
    L, H = len(m), len(m[0])
    lines = [f"| {name} | " + " | ".join(f"head {h}" for h in range(H)) + " |", "|---|" + "---:|" * H]
    for l in range(L):
        lines.append(f"| layer {l} | " + " | ".join(f"{v:.3f}" for v in m[l]) + " |")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("data")
    ap.add_argument("--json")
    a = ap.parse_args()
    torch.set_num_threads(2)
    model, ref = load_model(a.model)
    vocab = model.cfg["vocab_size"]
    val = np.load(os.path.join(a.data, "val.npy")).astype(np.int64)
    win = np.concatenate([np.full((len(val), 1), BOS), val[:, :255]], 1)
    total, n = 0.0, 0
    with torch.no_grad():
        for b in range(0, len(win), 32):
            x = torch.from_numpy(win[b:b + 32])
            lg = model(x[:, :-1])
            ce = torch.nn.functional.cross_entropy(lg[:, 1:].reshape(-1, vocab), x[:, 2:].reshape(-1), reduction="sum")
            total += ce.item()
            n += x[:, 2:].numel()
    loss = total / n
    train = np.load(os.path.join(a.data, "train.npy")).astype(np.int64)
    uni, bi, lam = baselines(train, win[:, 1:-1].ravel(), win[:, 2:].ravel(), vocab)
    pr = probes.Probes(val, vocab, BOS)
    with torch.no_grad():
        res = pr.measure(lambda ids: model(torch.from_numpy(ids), want_weights=True), torch)
    x = win[0][:64]
    with torch.no_grad():
        lg, ws = model(torch.from_numpy(x[None]), want_weights=True)
    rl, rws = ref.run(x)
    dl = float(np.abs(lg[0].numpy() - rl).max())
    dw = max(float(np.abs(ws[l][0, h].numpy() - rws[l][h]).max()) for l in range(len(ws)) for h in range(len(rws[0])))
    res.update({"heldout_tokens_predicted": n, "loss": loss, "unigram_loss": uni, "bigram_loss": bi,
                "bigram_lambda": lam, "reference_max_abs_diff": {"logits": dl, "weights": dw}})
    if a.json:
        with open(a.json, "w") as f:
            json.dump(res, f, indent=1)
    print("| model | held-out loss (nats/token) | perplexity |\n|---|---:|---:|")
    print(f"| unigram (add-one) | {uni:.3f} | {math.exp(uni):.1f} |")
    print(f"| bigram (interpolated, lambda {lam}) | {bi:.3f} | {math.exp(bi):.1f} |")
    print(f"| attnviz-tiny 2 | {loss:.3f} | {math.exp(loss):.1f} |")
    print(f"\n({n} held-out tokens predicted)\n")
    for name, key in (("previous-token", "prev_heads"), ("first-token (sink)", "sink_heads"),
                      ("induction (common words said twice)", "induction_heads")):
        print(table(name, res[key]) + "\n")
    print("| sentence said twice | copied word | top prediction? | p |\n|---|---|---|---:|")
    for (s, w), top, p in zip(probes.COPY_SENTENCES, res["copy_tops"], res["copy_ps"]):
        print(f"| {s} | {w} | {'yes' if top else 'no'} | {p:.3f} |")
    print(f"\ncopied word top-1 in {res['copy_top1']} of 10, mean p {res['copy_p']:.3f}")
    print(f"numpy reference vs torch float64: logits {dl:.2e}, weights {dw:.2e}")


if __name__ == "__main__":
    main()
