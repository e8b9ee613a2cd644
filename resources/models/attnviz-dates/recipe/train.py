# SPDX-License-Identifier: GPL-3.0-or-later
"""Trains attnviz-dates (t5.T5) on dates.py's examples from the training dates only.

Usage: python3 train.py WORK [--steps N] [--batch B] [--lr LR] [--seed S] [--eval-every K]

WORK holds spiece.model (tokenizer.py); train.py writes WORK/ckpt.npz at every evaluation (the weights under HF's names
as "w/NAME", the step, the config as JSON) and WORK/train.log. The batch of step k is a function of
(seed, k) alone: a random.Random seeded with them draws each example's format, case and date. Adam
(betas 0.9, 0.98), the learning rate rising linearly to LR over the first 5 % of the steps, then
falling linearly to 0; gradients clipped at 1.0; one thread (torch.set_num_threads(1)).
"""
import argparse
import json
import os
import random
import sys
import time

import numpy as np
import sentencepiece as spm
import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import dates  # noqa: E402
import t5  # noqa: E402

CONFIG = {
    "architectures": ["T5ForConditionalGeneration"],
    "model_type": "t5",
    "vocab_size": 64,
    "d_model": 64,
    "d_kv": 16,
    "d_ff": 256,
    "num_layers": 2,
    "num_decoder_layers": 2,
    "num_heads": 4,
    "relative_attention_num_buckets": 32,
    "relative_attention_max_distance": 128,
    "dropout_rate": 0.0,
    "layer_norm_epsilon": 1e-6,
    "initializer_factor": 1.0,
    "feed_forward_proj": "relu",
    "is_encoder_decoder": True,
    "tie_word_embeddings": True,
    "use_cache": True,
    "pad_token_id": 0,
    "eos_token_id": 1,
    "decoder_start_token_id": 0,
    "torch_dtype": "float32",
}


def batch(sp, examples, eos=1):
    """Padded source ids, their mask, decoder inputs (start 0, then the target) and labels (target, </s>)."""
    src = [sp.encode(e[2]) + [eos] for e in examples]
    tgt = [sp.encode(e[3]) + [eos] for e in examples]
    S = max(len(s) for s in src)
    T = max(len(t) for t in tgt)
    src_ids = torch.zeros(len(src), S, dtype=torch.long)
    mask = torch.zeros(len(src), S, dtype=torch.bool)
    labels = torch.full((len(tgt), T), -100, dtype=torch.long)
    dec_in = torch.zeros(len(tgt), T, dtype=torch.long)
    for i, (s, t) in enumerate(zip(src, tgt)):
        src_ids[i, :len(s)] = torch.tensor(s)
        mask[i, :len(s)] = True
        labels[i, :len(t)] = torch.tensor(t)
        dec_in[i, 1:len(t)] = torch.tensor(t[:-1])
    return src_ids, mask, dec_in, labels


def exact(model, sp, examples, chunk=256):
    """Per format: (exact conversions, count) under greedy decoding."""
    per = {}
    for i in range(0, len(examples), chunk):
        part = examples[i:i + chunk]
        src, mask, _, _ = batch(sp, part)
        out = model.greedy(src, mask)
        for e, row in zip(part, out.tolist()):
            ids = row[:row.index(1)] if 1 in row else row
            ok = sp.decode(ids) == e[3]
            a, n = per.get(e[0], (0, 0))
            per[e[0]] = (a + ok, n + 1)
    return per


def save(model, path, step):
    w = {"w/" + k: v.detach().numpy().astype(np.float32) for k, v in model.state_dict().items()}
    np.savez(path, step=step, config=json.dumps(CONFIG), **w)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("work")
    ap.add_argument("--steps", type=int, default=1800)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--seed", type=int, default=48)
    ap.add_argument("--eval-every", type=int, default=500)
    a = ap.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(a.seed)
    sp = spm.SentencePieceProcessor(model_file=os.path.join(a.work, "spiece.model"))
    assert sp.get_piece_size() <= CONFIG["vocab_size"]
    train_dates, _ = dates.split()
    two = [d for d in train_dates if dates.two_digit_ok(d)]
    held = dates.held_out_set(per_format=25, seed=3)
    model = t5.T5(CONFIG)
    n_params = sum(p.numel() for p in model.parameters())
    opt = torch.optim.Adam(model.parameters(), lr=a.lr, betas=(0.9, 0.98))
    warm = max(1, a.steps // 20)
    log = open(os.path.join(a.work, "train.log"), "w")

    def say(s):
        print(s, file=sys.stderr)
        log.write(s + "\n")
        log.flush()

    say(f"train.py: {n_params} parameters, {a.steps} steps of {a.batch}, lr {a.lr}, seed {a.seed}")
    t0 = time.time()
    run = 0.0
    for step in range(a.steps):
        rng = random.Random(a.seed * 1_000_003 + step)
        src, mask, dec_in, labels = batch(sp, [dates.example(rng, train_dates, two) for _ in range(a.batch)])
        lr = a.lr * min((step + 1) / warm, max(0.0, (a.steps - step) / (a.steps - warm)))
        for g in opt.param_groups:
            g["lr"] = lr
        logits = model.decode(model.encode(src, mask), dec_in, mask)
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels.reshape(-1), ignore_index=-100)
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        run = 0.98 * run + 0.02 * loss.item() if step else loss.item()
        if (step + 1) % a.eval_every == 0 or step + 1 == a.steps:
            model.eval()
            per = exact(model, sp, held)
            model.train()
            tot = sum(v[0] for v in per.values()) / sum(v[1] for v in per.values())
            worst = min(per, key=lambda k: per[k][0] / per[k][1])
            save(model, os.path.join(a.work, "ckpt.npz"), step + 1)
            say(f"step {step + 1}: loss {run:.4f}, lr {lr:.2e}, held-out exact {tot:.4f} "
                f"(worst {worst} {per[worst][0]}/{per[worst][1]}), {time.time() - t0:.0f} s")
    say(f"train.py: done in {time.time() - t0:.0f} s")


if __name__ == "__main__":
    main()
