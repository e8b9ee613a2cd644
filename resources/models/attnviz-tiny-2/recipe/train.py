# SPDX-License-Identifier: GPL-3.0-or-later
"""Trains attnviz-tiny 2 (a Llama: rotary positions, grouped-query attention, RMSNorm, SwiGLU, tied
head) on DATA (attnviz-tiny's prepare.py output: the same corpus and the same 4,096-token BPE).

Usage: python3 train.py DATA OUT [--steps N] [--device cpu|cuda] [--workers 8] [--resume CKPT.npz]

Every row starts with <|endoftext|> (id 4095), the BOS the tokenizer adds, so the model has one
fixed first token to park attention on (the "sink" the lessons show).

Two phases, as attnviz-tiny's recipe found necessary (its MANIFEST has the measurements):
- the drill (steps 0 .. --drill-steps): rows of random tokens and of common English words, each
  segment said twice, with the MLPs switched off, so that attention alone learns to copy (a
  previous-token head and induction heads form);
- then the MLPs are on and rows are drawn per row: running text, running text with a span pasted
  again later (natural text said twice: what a teacher types), a sentence window followed by its own
  first half or more (the evaluation's shape: the copy is cut at a random point), common words said
  twice and random tokens said twice (only their second copies scored).
The batch of step k depends only on (seed, k): a numpy PCG64 seeded with [seed, k]. So the data are
the same whatever the number of worker processes that make them, and a run resumed from a
checkpoint continues the same data stream. The learning rate has no end date (warm-up, then
1/sqrt(step)), so the checkpoint of step k is exactly what `--steps k` writes.

OUT gets log.jsonl (one line per evaluation), ckpt.npz (weights + AdamW state + step, rewritten at
every checkpoint; numpy so that a GPU run with torch 2.x resumes on Debian's torch 1.13 on the CPU),
and config.json (this run's settings).
"""
import argparse
import json
import math
import multiprocessing
import os
import sys
import time

import numpy as np

ap = argparse.ArgumentParser()
ap.add_argument("data")
ap.add_argument("out")
ap.add_argument("--steps", type=int, default=12000)
ap.add_argument("--rows", type=int, default=32, help="rows of --context tokens a step")
ap.add_argument("--context", type=int, default=512)
ap.add_argument("--threads", type=int, default=1)
ap.add_argument("--workers", type=int, default=0, help="processes making batches (0: in this process)")
ap.add_argument("--device", default="cpu")
ap.add_argument("--seed", type=int, default=29)
ap.add_argument("--lr", type=float, default=2e-3)
ap.add_argument("--warmup", type=int, default=300)
ap.add_argument("--weight-decay", type=float, default=0.1)
ap.add_argument("--layers", type=int, default=4)
ap.add_argument("--hidden", type=int, default=256)
ap.add_argument("--heads", type=int, default=8)
ap.add_argument("--kv-heads", type=int, default=2)
ap.add_argument("--head-dim", type=int, default=32)
ap.add_argument("--intermediate", type=int, default=768)
ap.add_argument("--positions", type=int, default=512)
ap.add_argument("--rope-theta", type=float, default=10000.0)
ap.add_argument("--p-copy", type=float, default=0.25)
ap.add_argument("--p-half", type=float, default=0.10)
ap.add_argument("--p-words", type=float, default=0.10)
ap.add_argument("--p-random", type=float, default=0.10)
ap.add_argument("--drill-steps", type=int, default=1000)
ap.add_argument("--main-repeat", default="2,64", help="after the drill: segments said twice are MIN,MAX tokens long")
ap.add_argument("--eval-every", type=int, default=500)
ap.add_argument("--ckpt-every", type=int, default=500)
ap.add_argument("--keep", default="", help="comma-separated steps whose checkpoints are kept as ckpt-STEP.npz")
ap.add_argument("--resume", default="")
ap.add_argument("--time-limit", type=float, default=0,
                help="seconds: stop at the first multiple of --ckpt-every reached after this much wall time")
ap.add_argument("--cooldown-from", type=int, default=-1,
                help="the last stage: from this step on, the learning rate falls linearly to 0 at --steps")
args = ap.parse_args()

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "attnviz-tiny", "recipe"))
import roles  # noqa: E402
import probes  # noqa: E402

BOS = 4095
SPAN = (8, 64)       # a copied span of text
REPEAT = (2, 64)     # a segment said twice (random tokens, common words)
DRILL_REPEAT = (2, 8)
CURRICULUM = ((1000, 128), (2000, 256))  # (until step, row length); then --context

train = np.load(os.path.join(args.data, "train.npy"))
val = np.load(os.path.join(args.data, "val.npy")).astype(np.int64)
with open(os.path.join(args.data, "meta.json")) as f:
    meta = json.load(f)
VOCAB = meta["vocab_size"]
ranges = [s["train"] for s in meta["sources"]]
weights = np.sqrt([e - b for b, e in ranges])
weights /= weights.sum()
MAIN_REPEAT = tuple(int(v) for v in args.main_repeat.split(","))
WORDS = np.array(probes.common_words(train), dtype=np.int64)


def text_row(rng, n):
    s = rng.choice(len(ranges), p=weights)
    b, e = ranges[s]
    start = int(rng.integers(b, e - (n + 1)))
    return train[start:start + n].astype(np.int64)


def repeats(rng, n, pool, span):
    """Segments of span[0]-span[1] tokens drawn from pool (None: any id but BOS), each said twice
    back to back; scored[k] says whether token k is in a second copy (its first token excepted)."""
    row, scored = [], []
    hi = min(span[1], n // 2)
    while len(row) < n:
        L = int(rng.integers(span[0], hi + 1))
        seg = (rng.integers(0, VOCAB - 1, size=L) if pool is None else pool[rng.integers(0, len(pool), size=L)]).tolist()
        row += seg + seg
        scored += [False] * (L + 1) + [True] * (L - 1)
    return np.array(row[:n], dtype=np.int64), np.array(scored[:n], dtype=bool)


def make_batch(step):
    """Rows of BOS + context tokens for step `step`: (x [rows, T], y [rows, T] with -100 unscored)."""
    rng = np.random.Generator(np.random.PCG64([args.seed, step]))
    T = next((t for until, t in CURRICULUM if step < until and t < args.context), args.context)
    rows = args.rows * args.context // T  # the same tokens a step: more, shorter rows early
    n = T  # tokens after BOS; x is BOS + the first T-1, y the T tokens after each position
    if step < args.drill_steps:
        p = {"random": 0.5, "words": 0.5, "copy": 0.0, "half": 0.0}
    else:
        p = {"random": args.p_random, "words": args.p_words, "copy": args.p_copy, "half": args.p_half}
    x = np.empty((rows, T + 1), dtype=np.int64)
    scored = np.ones((rows, T + 1), dtype=bool)
    for r in range(rows):
        u = rng.random()
        span = DRILL_REPEAT if step < args.drill_steps else MAIN_REPEAT
        if u < p["random"]:
            row, sc = repeats(rng, n, None, span)
        elif u < p["random"] + p["words"]:
            row, sc = repeats(rng, n, WORDS, span)
        else:
            row, sc = text_row(rng, n), np.ones(n, dtype=bool)
            if u < p["random"] + p["words"] + p["copy"]:
                L = int(rng.integers(SPAN[0], min(SPAN[1], n // 2) + 1))
                a = int(rng.integers(0, n - 2 * L + 1))
                b = int(rng.integers(a + L, n - L + 1))
                row[b:b + L] = row[a:a + L]
            elif u < p["random"] + p["words"] + p["copy"] + p["half"]:
                # a window of L tokens, then its first K tokens again (K from 4 to L), then text
                L = int(rng.integers(12, min(48, n // 2)))
                K = int(rng.integers(4, L + 1))
                row[L:L + K] = row[:K]
        x[r, 0] = BOS
        x[r, 1:] = row
        scored[r, 1:] = sc
    y = x[:, 1:].copy()
    y[~scored[:, 1:]] = -100
    return x[:, :-1], y


def main():
    if args.device.startswith("cuda"):
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    import torch
    import llama

    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    # warn_only: a CUDA op without a deterministic kernel warns instead of stopping the run (the CPU
    # run is deterministic either way; a GPU run is reproducible up to those ops)
    torch.use_deterministic_algorithms(True, warn_only=args.device != "cpu")
    os.makedirs(args.out, exist_ok=True)
    arch = {"hidden_size": args.hidden, "intermediate_size": args.intermediate, "num_hidden_layers": args.layers,
            "num_attention_heads": args.heads, "num_key_value_heads": args.kv_heads, "head_dim": args.head_dim,
            "max_position_embeddings": args.positions, "rms_norm_eps": 1e-5, "rope_theta": args.rope_theta}
    cfg = llama.hf_config(arch, VOCAB, BOS)
    model = llama.Llama(cfg).to(args.device)
    decay = [p for n, p in model.named_parameters() if p.dim() >= 2]
    no_decay = [p for n, p in model.named_parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": args.weight_decay},
                             {"params": no_decay, "weight_decay": 0.0}], lr=args.lr, betas=(0.9, 0.95), eps=1e-8)
    start = 0
    if args.resume:
        start = load_checkpoint(args.resume, model, opt, torch)

    def lr_at(step):
        if 0 <= args.cooldown_from <= step:
            base = lr_at_main(args.cooldown_from)
            return base * (args.steps - step) / (args.steps - args.cooldown_from)
        return lr_at_main(step)

    def lr_at_main(step):
        if step < args.warmup:
            return args.lr * (step + 1) / args.warmup
        return args.lr * math.sqrt(args.warmup / (step + 1))

    ev = probes.Probes(val, VOCAB, BOS)

    @torch.no_grad()
    def evaluate():
        model.eval()
        res = ev.measure(lambda ids: tuple(t for t in model(torch.from_numpy(ids).to(args.device), want_weights=True)),
                         torch)
        model.train()
        return res

    with open(os.path.join(args.out, "config.json"), "w") as f:
        json.dump({"args": vars(args), "cfg": cfg, "torch": torch.__version__}, f, indent=1)
    log = open(os.path.join(args.out, "log.jsonl"), "a")
    keep = {int(s) for s in args.keep.split(",") if s}
    t0, c0 = time.time(), time.process_time()
    running = None
    pool = multiprocessing.Pool(args.workers) if args.workers > 0 else None
    batches = pool.imap(make_batch, range(start, args.steps), chunksize=4) if pool else map(make_batch, range(start, args.steps))
    for step, (xb, yb) in zip(range(start, args.steps), batches):
        for g in opt.param_groups:
            g["lr"] = lr_at(step)
        x = torch.from_numpy(xb).to(args.device)
        y = torch.from_numpy(yb).to(args.device)
        for layer in model.model.layers:
            layer.use_mlp = step >= args.drill_steps
        logits = model(x)
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, VOCAB), y.reshape(-1), ignore_index=-100)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        running = loss.item() if running is None else 0.98 * running + 0.02 * loss.item()
        done = step + 1
        if done % args.eval_every == 0 or done == args.steps:
            rec = {"step": done, "train_loss": round(running, 4), "lr": lr_at(step),
                   "wall_s": round(time.time() - t0, 1), "cpu_s": round(time.process_time() - c0, 1)}
            rec.update(evaluate())
            log.write(json.dumps(rec) + "\n")
            log.flush()
            print(json.dumps({k: rec[k] for k in ("step", "train_loss", "val_loss", "prev", "induction_words",
                                                  "copy_top1", "copy_p", "sink", "wall_s")}), flush=True)
        stop = args.time_limit > 0 and time.time() - t0 > args.time_limit and done % args.ckpt_every == 0
        if done % args.ckpt_every == 0 or done == args.steps or done in keep:
            save_checkpoint(os.path.join(args.out, "ckpt.npz"), done, model, opt)
            if done in keep:
                save_checkpoint(os.path.join(args.out, f"ckpt-{done:06d}.npz"), done, model, opt)
        if stop:
            print(json.dumps({"stopped_at": done, "wall_s": round(time.time() - t0, 1)}), flush=True)
            break
    if pool:
        pool.terminate()


def save_checkpoint(path, step, model, opt):
    arrays = {"step": np.array(step)}
    for n, p in model.named_parameters():
        arrays["w/" + n] = p.detach().cpu().numpy()
        st = opt.state.get(p, {})
        if st:
            arrays["m/" + n] = st["exp_avg"].detach().cpu().numpy()
            arrays["v/" + n] = st["exp_avg_sq"].detach().cpu().numpy()
            arrays["t/" + n] = np.array(float(st["step"]))
    tmp = path + ".tmp.npz"
    np.savez(tmp, **arrays)
    os.replace(tmp, path)


def load_checkpoint(path, model, opt, torch):
    z = np.load(path)
    dev = next(model.parameters()).device
    with torch.no_grad():
        for n, p in model.named_parameters():
            p.copy_(torch.from_numpy(z["w/" + n]))
            if "m/" + n in z:
                # torch 1.13 keeps AdamW's step as a tensor, torch 2.x too (a float tensor)
                opt.state[p] = {"step": torch.tensor(float(z["t/" + n])),
                                "exp_avg": torch.from_numpy(z["m/" + n]).to(dev),
                                "exp_avg_sq": torch.from_numpy(z["v/" + n]).to(dev)}
    return int(z["step"])


if __name__ == "__main__":
    main()
