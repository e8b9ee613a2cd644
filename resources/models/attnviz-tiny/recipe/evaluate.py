# SPDX-License-Identifier: GPL-3.0-or-later
"""Measures a model folder on the held-out text: the MANIFEST's numbers, as JSON and Markdown tables.

Usage: python3 evaluate.py MODEL_DIR DATA [--json OUT.json] [--windows N]

Everything runs in float64 on the exported weights (model.safetensors as shipped):
- held-out loss / perplexity: the first 256 tokens of every held-out block (prepare.py), tokens
  1..255 of each predicted from the ones before; beside a unigram (add-one) and a
  bigram baseline (interpolated with the unigram; the weight lambda picked as the best on this same
  held-out text, so the baseline is, if anything, flattered), both counted on train.npy;
- head roles (roles.py) on N held-out windows of 256 tokens (previous-token, first-token, same-token)
  and on 20 sequences of 50 random vocabulary tokens said twice (induction), with the loss on the
  second copy's tokens 2..50 against the first copy's tokens 2..50;
- a check that the numpy reference forward (gpt2.Reference) and the torch module agree.
"""
import argparse
import json
import math
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpt2  # noqa: E402
import roles  # noqa: E402

T = 256
L_IND = 50
N_IND = 20


def load_model(folder):
    ref = gpt2.Reference(folder)
    cfg = dict(ref.cfg)
    model = gpt2.GPT2(cfg).double()
    state = {k: torch.from_numpy(v) for k, v in ref.w.items()}
    model.load_state_dict(state, strict=True)
    model.eval()
    return model, ref


def heldout_windows(data):
    val = np.load(os.path.join(data, "val.npy")).astype(np.int64)
    return val[:, :T]  # the first 256 tokens of every held-out block


def baselines(data, windows, vocab):
    train = np.load(os.path.join(data, "train.npy")).astype(np.int64)
    uni = np.bincount(train, minlength=vocab).astype(np.float64)
    p_uni = (uni + 1) / (uni.sum() + vocab)
    prev, nxt = windows[:, :-1].ravel(), windows[:, 1:].ravel()
    unigram = float(-np.mean(np.log(p_uni[nxt])))
    pair = train[:-1] * vocab + train[1:]
    keys, counts = np.unique(pair, return_counts=True)
    q = prev * vocab + nxt
    pos = np.searchsorted(keys, q)
    pos = np.minimum(pos, len(keys) - 1)
    c_pair = np.where(keys[pos] == q, counts[pos], 0).astype(np.float64)
    p_ml = np.where(uni[prev] > 0, c_pair / np.maximum(uni[prev], 1), 0.0)
    best = None
    for lam in (0.5, 0.6, 0.7, 0.8, 0.85, 0.9, 0.95):
        loss = float(-np.mean(np.log(lam * p_ml + (1 - lam) * p_uni[nxt])))
        if best is None or loss < best[0]:
            best = (loss, lam)
    return unigram, best[0], best[1]


@torch.no_grad()
def heldout_loss(model, windows, batch=32):
    total, n = 0.0, 0
    for b in range(0, len(windows), batch):
        x = torch.from_numpy(windows[b:b + batch])
        logits = model(x[:, :-1])
        total += torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), x[:, 1:].reshape(-1),
                                                   reduction="sum").item()
        n += x[:, 1:].numel()
    return total / n


@torch.no_grad()
def head_roles(model, windows, n_windows, vocab, seed=2022):
    rng = np.random.Generator(np.random.PCG64(seed))
    pick = windows[rng.choice(len(windows), n_windows, replace=False)]
    L, H = model.cfg["n_layer"], model.cfg["n_head"]
    prev = np.zeros((L, H))
    sink = np.zeros((L, H))
    same = np.zeros((L, H))
    for row in pick:
        _, ws = model(torch.from_numpy(row[None]), want_weights=True)
        for l, w in enumerate(ws):
            w = w[0].numpy()
            for h in range(H):
                prev[l, h] += roles.previous_token(w[h]) / n_windows
                sink[l, h] += roles.first_token(w[h]) / n_windows
                same[l, h] += roles.same_token(w[h], row) / n_windows
    seq = rng.integers(0, vocab - 1, size=(N_IND, L_IND))
    x = torch.from_numpy(np.concatenate([seq, seq], 1))
    logits, ws = model(x, want_weights=True)
    ind = np.array([[roles.induction(w[:, h].numpy(), L_IND) for h in range(H)] for w in ws])
    ce = torch.nn.functional.cross_entropy(logits[:, :-1].reshape(-1, vocab), x[:, 1:].reshape(-1),
                                           reduction="none").view(N_IND, -1).numpy()
    # ce[:, k] is the loss of predicting token k+1: copy 1's tokens 2..50 are k = 0..48,
    # copy 2's tokens 2..50 (positions 51..99) are k = 50..98.
    copy1, copy2 = float(ce[:, 0:L_IND - 1].mean()), float(ce[:, L_IND:2 * L_IND - 1].mean())
    return prev, sink, same, ind, copy1, copy2


def reference_check(model, ref, windows):
    x = windows[0][:64]
    with torch.no_grad():
        logits, ws = model(torch.from_numpy(x[None]), want_weights=True)
    rl, rws = ref.run(x)
    dl = float(np.abs(logits[0].numpy() - rl).max())
    dw = max(float(np.abs(ws[l][0, h].numpy() - rws[l][h]).max()) for l in range(len(ws)) for h in range(len(rws[0])))
    return dl, dw


def table(name, m):
    L, H = m.shape
    lines = [f"| {name} | " + " | ".join(f"head {h}" for h in range(H)) + " |", "|---|" + "---:|" * H]
    for l in range(L):
        lines.append(f"| layer {l} | " + " | ".join(f"{v:.3f}" for v in m[l]) + " |")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("data")
    ap.add_argument("--json")
    ap.add_argument("--windows", type=int, default=64)
    a = ap.parse_args()
    torch.set_num_threads(2)
    model, ref = load_model(a.model)
    vocab = model.cfg["vocab_size"]
    windows = heldout_windows(a.data)
    loss = heldout_loss(model, windows)
    uni, bi, lam = baselines(a.data, windows, vocab)
    prev, sink, same, ind, copy1, copy2 = head_roles(model, windows, a.windows, vocab)
    dl, dw = reference_check(model, ref, windows)
    res = {"heldout_tokens_predicted": int(windows[:, 1:].size), "loss": loss, "perplexity": math.exp(loss),
           "unigram_loss": uni, "unigram_perplexity": math.exp(uni),
           "bigram_loss": bi, "bigram_perplexity": math.exp(bi), "bigram_lambda": lam,
           "previous_token": prev.tolist(), "first_token": sink.tolist(), "same_token": same.tolist(),
           "induction": ind.tolist(), "copy1_loss": copy1, "copy2_loss": copy2,
           "reference_max_abs_diff": {"logits": dl, "weights": dw}}
    if a.json:
        with open(a.json, "w") as f:
            json.dump(res, f, indent=1)
    print("| model | held-out loss (nats/token) | perplexity |\n|---|---:|---:|")
    print(f"| unigram (add-one) | {uni:.3f} | {math.exp(uni):.1f} |")
    print(f"| bigram (interpolated, lambda {lam}) | {bi:.3f} | {math.exp(bi):.1f} |")
    print(f"| attnviz-tiny | {loss:.3f} | {math.exp(loss):.1f} |")
    print(f"\n({windows[:, 1:].size} held-out tokens predicted)\n")
    for name, m in (("previous-token", prev), ("first-token (sink)", sink), ("same-token", same), ("induction", ind)):
        print(table(name, m) + "\n")
    print(f"loss on 50 random tokens, first copy (tokens 2-50): {copy1:.3f}; second copy (tokens 2-50): {copy2:.3f}")
    print(f"numpy reference vs torch float64: logits {dl:.2e}, weights {dw:.2e}")


if __name__ == "__main__":
    main()
