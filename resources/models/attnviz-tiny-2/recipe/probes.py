# SPDX-License-Identifier: GPL-3.0-or-later
"""What attnviz-tiny 2 is measured on (train.py's log and evaluate.py's tables), on text the training
never saw.

- COPY_SENTENCES: ten natural sentences written for this evaluation, each said once and then again
  up to (not including) its target word: "The quick brown fox jumps over the lazy dog. The quick
  brown fox jumps over the lazy" -> " dog". Scored: is the target's first token the top prediction,
  and its probability.
- EVAL_WORDS: fifty common English words, each one token of the vocabulary, said in a random order
  and then again in the same order (BOS first): the induction score of a head is the mean over the
  second copy's queries of the weight on the token after the same word's first occurrence. These
  words are left out of the training's word drill (common_words), so the score is on words the drill
  never repeated.
- previous-token and first-token (sink) scores (attnviz-tiny's roles.py) on held-out text windows,
  BOS first.
"""
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "attnviz-tiny", "recipe"))
import bpe  # noqa: E402
import roles  # noqa: E402

TOKENIZER_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "attnviz-tiny")

COPY_SENTENCES = [
    ("The quick brown fox jumps over the lazy dog.", "dog"),
    ("Please remember to buy bread and milk on the way home.", "milk"),
    ("She studied all night because the exam was early the next morning.", "exam"),
    ("We need more chairs for the meeting in the large hall.", "need"),
    ("The old captain walked slowly along the wooden pier with his brother.", "brother"),
    ("My sister plays the piano every evening after dinner.", "evening"),
    ("The children built a castle of sand near the water.", "sand"),
    ("A cold wind blew across the empty field at dawn.", "field"),
    ("He wrote a long letter to his mother in the village.", "letter"),
    ("The garden behind the house was full of yellow flowers.", "flowers"),
]

EVAL_WORDS = ["time", "people", "water", "house", "world", "night", "money", "school", "friend", "city", "table",
              "river", "mother", "father", "morning", "paper", "music", "voice", "light", "door", "road", "field",
              "heart", "letter", "horse", "bread", "church", "mountain", "animal", "flower", "number", "answer",
              "question", "king", "ship", "sea", "fire", "tree", "stone", "gold", "silver", "wood", "hand",
              "head", "eye", "face", "child", "woman", "man", "bird"]

L_IND = len(EVAL_WORDS)


def tokenizer():
    return bpe.Tokenizer(TOKENIZER_DIR)


def eval_word_ids(tok):
    ids = []
    for w in EVAL_WORDS:
        t = tok.encode(" " + w)
        assert len(t) == 1, f"probes: {w!r} is {len(t)} tokens"
        ids.append(t[0])
    return ids


def common_words(train, n=1500):
    """The drill's word pool: the n most frequent tokens of the training text that are a space and
    three or more lowercase letters (whole common words), without EVAL_WORDS."""
    tok = tokenizer()
    held = set(eval_word_ids(tok))
    counts = np.bincount(np.asarray(train, dtype=np.int64), minlength=len(tok.vocab))
    pool = []
    for i in np.argsort(-counts, kind="stable"):
        s = tok.decode([int(i)])
        if len(s) >= 4 and s[0] == " " and s[1:].isalpha() and s[1:].islower() and s[1:].isascii() and int(i) not in held:
            pool.append(int(i))
            if len(pool) == n:
                break
    return pool


def copy_prompts(tok, bos):
    """[(ids, target id)]: BOS + sentence + " " + the sentence up to its target word."""
    out = []
    for s, word in COPY_SENTENCES:
        cut = s.index(" " + word) if not s.startswith(word) else 0
        prefix = s + " " + s[:cut]
        target = tok.encode((" " if cut else " ") + word)[0]
        out.append(([bos] + tok.encode(prefix), target))
    return out


class Probes:
    """Fixed evaluation material; measure(run) with run(ids [B, T] int64) -> (logits, [w per layer
    [B, H, T, T]]) as torch tensors."""

    def __init__(self, val, vocab, bos, n_text=32, T=256, seed=2026):
        tok = tokenizer()
        rng = np.random.Generator(np.random.PCG64(seed))
        pick = val[rng.choice(len(val), n_text, replace=False)]
        self.text = np.concatenate([np.full((n_text, 1), bos), pick[:, :T - 1]], 1).astype(np.int64)
        ids = np.array(eval_word_ids(tok), dtype=np.int64)
        self.ind = []
        for _ in range(10):
            p = ids[rng.permutation(L_IND)]
            self.ind.append(np.concatenate([[bos], p, p]))
        self.ind = np.stack(self.ind).astype(np.int64)
        self.copy = copy_prompts(tok, bos)
        self.vocab = vocab

    def measure(self, run, torch):
        F = torch.nn.functional
        logits, ws = run(self.text)
        val_loss = F.cross_entropy(logits[:, :-1].reshape(-1, self.vocab).float(),
                                   torch.from_numpy(self.text[:, 1:]).to(logits.device).reshape(-1)).item()
        prev = [[roles.previous_token(w[:, h].float().cpu().numpy()) for h in range(w.shape[1])] for w in ws]
        sink = [[roles.first_token(w[:, h].float().cpu().numpy()) for h in range(w.shape[1])] for w in ws]
        _, ws = run(self.ind)
        i = np.arange(L_IND + 1, 2 * L_IND + 1)  # second copy's queries (BOS at 0)
        ind = [[float(np.mean(w[:, h].float().cpu().numpy()[:, i, i - L_IND + 1])) for h in range(w.shape[1])] for w in ws]
        tops, ps = [], []
        for ids, target in self.copy:
            lg, _ = run(np.array([ids], dtype=np.int64))
            pr = torch.softmax(lg[0, -1].double(), -1)
            ps.append(float(pr[target]))
            tops.append(int(pr.argmax()) == target)
        return {"val_loss": round(val_loss, 4), "prev": round(max(max(r) for r in prev), 3),
                "sink": round(max(max(r) for r in sink[1:]) if len(sink) > 1 else max(sink[0]), 3),
                "induction_words": round(max(max(r) for r in ind), 3), "copy_top1": sum(tops), "copy_tops": tops,
                "copy_p": round(float(np.mean(ps)), 3), "copy_ps": [round(p, 3) for p in ps],
                "prev_heads": [[round(v, 3) for v in r] for r in prev],
                "sink_heads": [[round(v, 3) for v in r] for r in sink],
                "induction_heads": [[round(v, 3) for v in r] for r in ind]}


if __name__ == "__main__":
    tok = tokenizer()
    print(json.dumps({"eval_words": eval_word_ids(tok),
                      "copy": [(len(ids), t, tok.decode([t])) for ids, t in copy_prompts(tok, 4095)]}))
