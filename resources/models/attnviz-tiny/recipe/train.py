# SPDX-License-Identifier: GPL-3.0-or-later
"""Trains attnviz-tiny (GPT-2 architecture) on DATA (prepare.py's output), seeded and deterministic.

Usage: python3 train.py DATA OUT [--steps N] [--threads 2] [--device cpu] [...]

A step is 1,024 tokens: 16 rows of 64 for the first 1,000 steps, 8 rows of 128 until step 2,000, then
4 rows of 256 (n_positions is 256, so every learned position is trained). Short rows first because
attention over few keys learns faster.

Two phases:
- the drill (steps 0 .. --drill-steps, 3,000): every row is random repeats (below) and the MLPs are
  switched off, so the two attention layers alone must learn to copy: a previous-token head in layer 0
  and an induction head in layer 1 form in it (Olsson et al. 2022's attention-only setting). Measured
  on a GPU with torch 2.11 (8 settings side by side): with the MLPs on from the start, or with the
  alternating-pairs drill mixed in, the model learned to copy the second copy by some other route and
  no head scored above 0.06 on induction in 26,000 steps; with natural text at 50 % or more, copying
  was not learned at all in 26,000 steps. Attention-only on pure repeats: induction 0.46 at step
  2,000, 0.65 at 3,000.
- then the MLPs are switched on and rows are drawn per row:
  - text (50 %): a window of one source's running text; the source is drawn with probability
    proportional to the square root of its size (so Austen, Moby-Dick and the Bible are not drowned
    by the 1913 dictionary);
  - copied span (20 %): a text window in which a span of 8-64 tokens is pasted again later in the
    same row (natural text said twice);
  - random repeats (30 %): segments of 8-64 uniformly random vocabulary tokens, each said twice,
    back to back (Olsson et al. 2022's repeated random tokens); only the second copies are scored,
    since the first copy cannot be predicted.
  (--p-alternate adds rows of two tokens alternating, A B A B ...: 0 by default, see above.)
The learning rate has no end date (linear warm-up, then 1/sqrt(step)), so the checkpoint written
at step k is exactly what `--steps k` would give: a run stopped early is still reproducible.

A step is 4 rows (1,024 tokens) on one thread: on the shared 2-core build machine 8 x 256 tokens cost
3-6x the CPU time of 4 x 256 (the 8 x 256 x 4096 logits fall out of the cache) and a second thread
only doubled the CPU time (OpenMP spinning against the compilers), so one thread it is.

Reproducibility: torch.manual_seed, one numpy Generator for the data, torch.set_num_threads(N),
torch.use_deterministic_algorithms(True). OUT gets log.jsonl (one line per evaluation: losses,
the best role scores, wall and CPU seconds), model.pt (weights, rewritten at every checkpoint) and
config.json (this run's settings).
"""
import argparse
import json
import math
import os
import shutil
import sys
import time

import numpy as np

ap = argparse.ArgumentParser()
ap.add_argument("data")
ap.add_argument("out")
ap.add_argument("--steps", type=int, default=16000)
ap.add_argument("--batch", type=int, default=4, help="rows of 256 tokens a step (more, shorter rows early)")
ap.add_argument("--threads", type=int, default=1)
ap.add_argument("--device", default="cpu")
ap.add_argument("--seed", type=int, default=17)
ap.add_argument("--lr", type=float, default=3e-3)
ap.add_argument("--warmup", type=int, default=300)
ap.add_argument("--weight-decay", type=float, default=0.1)
ap.add_argument("--n-layer", type=int, default=2)
ap.add_argument("--n-head", type=int, default=4)
ap.add_argument("--n-embd", type=int, default=128)
ap.add_argument("--n-inner", type=int, default=256)
ap.add_argument("--p-copy", type=float, default=0.2)
ap.add_argument("--p-random", type=float, default=0.3)
ap.add_argument("--p-alternate", type=float, default=0.0)
ap.add_argument("--drill-steps", type=int, default=3000,
                help="first steps: random repeats only, MLPs off (the attention learns to copy alone)")
ap.add_argument("--eval-every", type=int, default=250)
ap.add_argument("--ckpt-every", type=int, default=250)
args = ap.parse_args()

if args.device.startswith("cuda"):
    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
import torch  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpt2  # noqa: E402
import roles  # noqa: E402

T = 256
SPAN = (8, 64)
CURRICULUM = ((1000, 64), (2000, 128))  # (until step, row length); then 256

torch.set_num_threads(args.threads)
torch.manual_seed(args.seed)
torch.use_deterministic_algorithms(True)
os.makedirs(args.out, exist_ok=True)

train = np.load(os.path.join(args.data, "train.npy")).astype(np.int64)
val = np.load(os.path.join(args.data, "val.npy")).astype(np.int64)
with open(os.path.join(args.data, "meta.json")) as f:
    meta = json.load(f)
ranges = [s["train"] for s in meta["sources"]]
weights = np.sqrt([e - b for b, e in ranges])
weights /= weights.sum()

VOCAB = meta["vocab_size"]  # the tokenizer's, <|endoftext|> (never in the data) included
cfg = {"vocab_size": VOCAB, "n_positions": T, "n_layer": args.n_layer, "n_head": args.n_head,
       "n_embd": args.n_embd, "n_inner": args.n_inner, "layer_norm_epsilon": 1e-5}

rng = np.random.Generator(np.random.PCG64(args.seed))


def context_at(step):
    """Curriculum: short rows first (attention learns faster over fewer keys), the same tokens a step."""
    for until, t in CURRICULUM:
        if step < until:
            return t
    return T


def text_row(t):
    s = rng.choice(len(ranges), p=weights)
    b, e = ranges[s]
    start = int(rng.integers(b, e - (t + 1)))
    return train[start:start + t + 1].copy()


def batch(step):
    if step < args.drill_steps:
        p_random, p_copy, p_alternate = 1.0, 0.0, 0.0
    else:
        p_random, p_copy, p_alternate = args.p_random, args.p_copy, args.p_alternate
    T = context_at(step)
    rows = args.batch * 256 // T
    span = (SPAN[0], min(SPAN[1], T // 2))
    x = np.empty((rows, T + 1), dtype=np.int64)
    scored = np.ones((rows, T), dtype=bool)
    for r in range(rows):
        u = rng.random()
        if u >= 1.0 - p_alternate:
            row, mask = [], []
            while len(row) < T + 1:
                L = int(rng.integers(6, 17))
                a, b = rng.integers(0, VOCAB - 1, size=2).tolist()
                row += ([a, b] * L)[:L]
                mask += [False, False] + [True] * (L - 2)
            x[r] = row[:T + 1]
            scored[r] = mask[1:T + 1]
        elif u < p_random:
            row, mask = [], []
            while len(row) < T + 1:
                L = int(rng.integers(span[0], span[1] + 1))
                seg = rng.integers(0, VOCAB - 1, size=L).tolist()  # any id but <|endoftext|>
                row += seg + seg
                mask += [False] * (L + 1) + [True] * (L - 1)  # mask[k]: is token k predictable
            x[r] = row[:T + 1]
            scored[r] = mask[1:T + 1]
        else:
            row = text_row(T)
            if u < p_random + p_copy:
                L = int(rng.integers(span[0], span[1] + 1))
                a = int(rng.integers(0, T + 1 - 2 * L + 1))
                b = int(rng.integers(a + L, T + 1 - L + 1))
                row[b:b + L] = row[a:a + L]
            x[r] = row
    x = torch.from_numpy(x)
    y = x[:, 1:].clone()
    y[~torch.from_numpy(scored)] = -100
    return x[:, :-1].to(args.device), y.to(args.device)


# Fixed evaluation material, drawn from its own generator so that it does not move the training data.
ev = np.random.Generator(np.random.PCG64(args.seed + 1))
EVAL_TEXT = torch.from_numpy(val[ev.choice(len(val), 32, replace=False)][:, :T + 1].copy())
L_IND = 50
seq = ev.integers(0, VOCAB - 1, size=(16, L_IND))
EVAL_IND = torch.from_numpy(np.concatenate([seq, seq], 1))

model = gpt2.GPT2(cfg).to(args.device)
decay = [p for n, p in model.named_parameters() if p.dim() >= 2]
no_decay = [p for n, p in model.named_parameters() if p.dim() < 2]
opt = torch.optim.AdamW([{"params": decay, "weight_decay": args.weight_decay},
                         {"params": no_decay, "weight_decay": 0.0}], lr=args.lr, betas=(0.9, 0.95), eps=1e-8)


def lr_at(step):
    if step < args.warmup:
        return args.lr * (step + 1) / args.warmup
    return args.lr * math.sqrt(args.warmup / (step + 1))


@torch.no_grad()
def evaluate():
    model.eval()
    x = EVAL_TEXT.to(args.device)
    logits, ws = model(x[:, :-1], want_weights=True)
    val_loss = torch.nn.functional.cross_entropy(logits.reshape(-1, VOCAB), x[:, 1:].reshape(-1)).item()
    prev = [[roles.previous_token(w[:, h].cpu().numpy()) for h in range(cfg["n_head"])] for w in ws]
    sink = [[roles.first_token(w[:, h].cpu().numpy()) for h in range(cfg["n_head"])] for w in ws]
    xi = EVAL_IND.to(args.device)
    logits, ws = model(xi, want_weights=True)
    ce = torch.nn.functional.cross_entropy(logits[:, :-1].reshape(-1, VOCAB), xi[:, 1:].reshape(-1),
                                           reduction="none").view(xi.shape[0], -1)
    ind = [[roles.induction(w[:, h].cpu().numpy(), L_IND) for h in range(cfg["n_head"])] for w in ws]
    model.train()
    return {"val_loss": round(val_loss, 4),
            "copy1_loss": round(ce[:, :L_IND - 1].mean().item(), 4),
            "copy2_loss": round(ce[:, L_IND:].mean().item(), 4),
            "prev": max(max(r) for r in prev), "sink": max(max(r) for r in sink),
            "induction": max(max(r) for r in ind),
            "induction_heads": [[round(v, 3) for v in r] for r in ind],
            "prev_heads": [[round(v, 3) for v in r] for r in prev]}


def save(step):
    tmp = os.path.join(args.out, "model.pt.tmp")
    torch.save({"step": step, "cfg": cfg, "state": model.state_dict()}, tmp)
    os.replace(tmp, os.path.join(args.out, "model.pt"))
    os.makedirs(os.path.join(args.out, "steps"), exist_ok=True)
    shutil.copyfile(os.path.join(args.out, "model.pt"), os.path.join(args.out, "steps", f"model-{step:06d}.pt"))


with open(os.path.join(args.out, "config.json"), "w") as f:
    json.dump({"args": vars(args), "cfg": cfg, "torch": torch.__version__}, f, indent=1)
log = open(os.path.join(args.out, "log.jsonl"), "a")
t0, c0 = time.time(), time.process_time()
running = None
for step in range(args.steps):
    for g in opt.param_groups:
        g["lr"] = lr_at(step)
    x, y = batch(step)
    for block in model.h:
        block.use_mlp = step >= args.drill_steps
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
        print(json.dumps({k: rec[k] for k in ("step", "train_loss", "val_loss", "copy1_loss", "copy2_loss",
                                              "prev", "sink", "induction", "wall_s")}), flush=True)
    if done % args.ckpt_every == 0 or done == args.steps:
        save(done)
