# SPDX-License-Identifier: GPL-3.0-or-later
"""Token streams for training and held-out text: sentences.txt -> DATA/{train,val}.npy + meta.json.

Usage: python3 prepare.py SENTENCES SOURCES_LOG TOKENIZER_DIR DATA

SENTENCES is extract_corpus.py's output (one sentence a line, sources in a fixed order) and
SOURCES_LOG its stderr ("name: N sentences kept, ..." per source, in the same order), which says
where each source's lines end. Each source's sentences are joined with single spaces into one
running text and encoded with the BPE of TOKENIZER_DIR. The stream is cut into blocks of 1,024
tokens; every 50th block (block 49, 99, ...) is held out: val.npy holds those blocks (n x 1024),
train.npy the rest of each source back to back, and meta.json each source's [begin, end) in train.npy.
"""
import json
import os
import re
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bpe  # noqa: E402

BLOCK = 1024
HOLD_OUT_EVERY = 50


def main():
    if len(sys.argv) != 5:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    sentences, sources_log, tokdir, data = sys.argv[1:]
    counts = []
    with open(sources_log, encoding="utf-8") as f:
        for line in f:
            m = re.match(r"^(\S+): (\d+) sentences kept", line)
            if m:
                counts.append((m.group(1), int(m.group(2))))
    tok = bpe.Tokenizer(tokdir)
    os.makedirs(data, exist_ok=True)
    train_parts, val_blocks, meta = [], [], {"sources": [], "block": BLOCK, "hold_out_every": HOLD_OUT_EVERY,
            "vocab_size": len(tok.vocab)}
    n_train = 0
    with open(sentences, encoding="utf-8") as f:
        for name, n in counts:
            lines = [f.readline().rstrip("\n") for _ in range(n)]
            assert all(lines), f"{sentences}: ran out of lines in {name}"
            ids = np.array(tok.encode(" ".join(lines)), dtype=np.uint16)
            nb = len(ids) // BLOCK
            keep = []
            for b in range(nb + 1):
                blk = ids[b * BLOCK:(b + 1) * BLOCK]
                if b % HOLD_OUT_EVERY == HOLD_OUT_EVERY - 1 and len(blk) == BLOCK:
                    val_blocks.append(blk)
                else:
                    keep.append(blk)
            tr = np.concatenate(keep)
            train_parts.append(tr)
            meta["sources"].append({"name": name, "sentences": n, "tokens": int(len(ids)),
                                    "train": [n_train, n_train + int(len(tr))], "bytes": sum(len(l.encode()) + 1 for l in lines) - 1})
            n_train += len(tr)
            print(f"prepare: {name}: {n} sentences, {len(ids)} tokens", file=sys.stderr, flush=True)
        assert f.readline() == "", f"{sentences}: more lines than {sources_log} counts"
    np.save(os.path.join(data, "train.npy"), np.concatenate(train_parts))
    np.save(os.path.join(data, "val.npy"), np.stack(val_blocks))
    meta["train_tokens"] = int(n_train)
    meta["val_tokens"] = int(len(val_blocks) * BLOCK)
    with open(os.path.join(data, "meta.json"), "w") as f:
        json.dump(meta, f, indent=1)
    print(f"prepare: {n_train} training tokens, {len(val_blocks)} held-out blocks", file=sys.stderr)


if __name__ == "__main__":
    main()
