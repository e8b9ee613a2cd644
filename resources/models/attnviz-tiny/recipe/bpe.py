# SPDX-License-Identifier: GPL-3.0-or-later
"""Byte-level BPE as GPT-2 does it: trainer, encoder, and GPT-2's vocab.json / merges.txt files.

Usage: python3 bpe.py train SENTENCES VOCAB_SIZE OUTDIR     (writes OUTDIR/vocab.json, merges.txt)

Shape after karpathy/minbpe (byte table, regex split, merges by rank), but the trainer keeps pair
counts incrementally (a pair -> count table, a pair -> words index and a lazy max-heap) so that
~4,000 merges over the whole 71 MB corpus take a minute or two, not hours. Ties between pairs of
equal count go to the smaller (left id, right id): the same merges on every run.

Ids: 0..255 are the 256 bytes in GPT-2's bytes_to_unicode order (id 0 = "!", as in GPT-2's
vocab.json), 256.. the merges in the order learned, and the last id is <|endoftext|>.
Pre-tokenization is GPT-2's own pattern through the `regex` module (Debian: python3-regex), which
knows \\p{L} and \\p{N}; Python's `re` does not.
"""
import collections
import heapq
import json
import os
import sys

import regex

GPT2_PATTERN = regex.compile(r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+""")
ENDOFTEXT = "<|endoftext|>"


def bytes_to_unicode():
    """GPT-2's table (openai/gpt-2 encoder.py): every byte to a printable character."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return bs, [chr(c) for c in cs]


BYTE_ORDER, BYTE_CHARS = bytes_to_unicode()
BYTE_TO_ID = {b: i for i, b in enumerate(BYTE_ORDER)}  # byte value -> token id 0..255


def pretokens(text):
    return GPT2_PATTERN.findall(text)


def count_pretokens(lines):
    counts = collections.Counter()
    for line in lines:
        counts.update(pretokens(line))
    return counts


def train(counts, vocab_size, log=None):
    """counts: pre-token -> frequency. Returns the merges as a list of (left id, right id)."""
    n_merges = vocab_size - 256 - 1  # the last id is <|endoftext|>
    words = []  # list of [symbol ids]
    freqs = []
    for w, c in sorted(counts.items()):
        words.append([BYTE_TO_ID[b] for b in w.encode("utf-8")])
        freqs.append(c)
    pair_count = collections.defaultdict(int)
    where = collections.defaultdict(set)
    for wi, sym in enumerate(words):
        f = freqs[wi]
        for p in zip(sym, sym[1:]):
            pair_count[p] += f
            where[p].add(wi)
    heap = [(-c, p) for p, c in pair_count.items()]
    heapq.heapify(heap)
    merges = []
    while len(merges) < n_merges and heap:
        negc, pair = heapq.heappop(heap)
        c = pair_count.get(pair, 0)
        if c <= 0:
            continue
        if -negc != c:  # stale entry: push the current count back
            heapq.heappush(heap, (-c, pair))
            continue
        new_id = 256 + len(merges)
        merges.append(pair)
        if log and len(merges) % 500 == 0:
            log(f"bpe: {len(merges)} merges, last count {c}")
        touched = collections.defaultdict(int)
        for wi in sorted(where.pop(pair)):
            sym = words[wi]
            f = freqs[wi]
            for p in zip(sym, sym[1:]):
                pair_count[p] -= f
                touched[p] -= f
                where[p].discard(wi)
            out = []
            i = 0
            while i < len(sym):
                if i + 1 < len(sym) and sym[i] == pair[0] and sym[i + 1] == pair[1]:
                    out.append(new_id)
                    i += 2
                else:
                    out.append(sym[i])
                    i += 1
            words[wi] = out
            for p in zip(out, out[1:]):
                pair_count[p] += f
                touched[p] += f
                where[p].add(wi)
        pair_count.pop(pair, None)
        for p, delta in touched.items():
            if p == pair:
                continue
            c = pair_count.get(p, 0)
            if c <= 0:
                pair_count.pop(p, None)
                where.pop(p, None)
            elif delta > 0:
                heapq.heappush(heap, (-c, p))
            # counts that only went down keep their (now too high) heap entry; popped later as stale
    return merges


def token_strings(merges):
    """Each id's string in GPT-2's byte-to-unicode alphabet."""
    strs = list(BYTE_CHARS)
    for a, b in merges:
        strs.append(strs[a] + strs[b])
    return strs


def save(merges, outdir):
    strs = token_strings(merges)
    vocab = {s: i for i, s in enumerate(strs)}
    assert len(vocab) == len(strs), "two ids with the same string"
    vocab[ENDOFTEXT] = len(strs)
    with open(os.path.join(outdir, "vocab.json"), "w", encoding="utf-8") as f:
        f.write(json.dumps(vocab))  # GPT-2's own file: ensure_ascii, ", " and ": " separators
    with open(os.path.join(outdir, "merges.txt"), "w", encoding="utf-8") as f:
        f.write("#version: 0.2\n")
        for a, b in merges:
            f.write(f"{strs[a]} {strs[b]}\n")


class Tokenizer:
    """Encodes and decodes with a saved vocab.json + merges.txt (GPT-2's algorithm: lowest rank first)."""

    def __init__(self, folder):
        with open(os.path.join(folder, "vocab.json"), encoding="utf-8") as f:
            self.vocab = json.load(f)
        with open(os.path.join(folder, "merges.txt"), encoding="utf-8") as f:
            lines = f.read().split("\n")
        assert lines[0].startswith("#version"), "merges.txt: no #version line"
        self.ranks = {}
        for i, line in enumerate(l for l in lines[1:] if l):
            a, b = line.split(" ")
            self.ranks[(a, b)] = i
        self.id_to_str = {i: s for s, i in self.vocab.items()}
        self.eot = self.vocab[ENDOFTEXT]
        self.cache = {}
        self.byte_of_char = {c: b for b, c in zip(BYTE_ORDER, BYTE_CHARS)}

    def _bpe(self, word):
        parts = [BYTE_CHARS[BYTE_TO_ID[b]] for b in word.encode("utf-8")]
        while len(parts) > 1:
            best = min(range(len(parts) - 1), key=lambda i: self.ranks.get((parts[i], parts[i + 1]), 1 << 30))
            pair = (parts[best], parts[best + 1])
            if pair not in self.ranks:
                break
            out, i = [], 0
            while i < len(parts):
                if i + 1 < len(parts) and parts[i] == pair[0] and parts[i + 1] == pair[1]:
                    out.append(pair[0] + pair[1])
                    i += 2
                else:
                    out.append(parts[i])
                    i += 1
            parts = out
        return [self.vocab[p] for p in parts]

    def encode(self, text):
        ids = []
        for w in pretokens(text):
            got = self.cache.get(w)
            if got is None:
                got = self.cache[w] = self._bpe(w)
            ids.extend(got)
        return ids

    def decode(self, ids):
        data = bytes(self.byte_of_char[c] for i in ids if i != self.eot for c in self.id_to_str[i])
        return data.decode("utf-8", errors="replace")

    def token_text(self, i):
        """One token's text as the window would label it (bytes decoded leniently)."""
        if i == self.eot:
            return ENDOFTEXT
        return bytes(self.byte_of_char[c] for c in self.id_to_str[i]).decode("utf-8", errors="replace")


def main():
    if len(sys.argv) != 5 or sys.argv[1] != "train":
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    sentences, vocab_size, outdir = sys.argv[2], int(sys.argv[3]), sys.argv[4]
    log = lambda m: print(m, file=sys.stderr, flush=True)  # noqa: E731
    with open(sentences, encoding="utf-8") as f:
        # The training text joins a source's sentences with spaces (see prepare.py), so every
        # sentence but the first starts with a space: count it that way.
        counts = count_pretokens(" " + line.rstrip("\n") for line in f)
    log(f"bpe: {len(counts)} distinct pre-tokens, {sum(counts.values())} in all")
    merges = train(counts, vocab_size, log)
    os.makedirs(outdir, exist_ok=True)
    save(merges, outdir)
    log(f"bpe: {len(merges)} merges, vocabulary {len(merges) + 257}")


if __name__ == "__main__":
    main()
