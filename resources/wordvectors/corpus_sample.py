# SPDX-License-Identifier: GPL-3.0-or-later
"""Writes a sample of (sentence, tokens) pairs from the corpus, for the tokenizer agreement test.

Usage: python3 corpus_sample.py SENTENCES.txt CORPUS.txt SAMPLE.tsv

Every 5000th sentence, plus the first four (under 200 characters) with a typographic apostrophe,
an ASCII apostrophe, an accented letter, a digit, a ligature, an em dash. Each line: the sentence,
a tab, its tokens as `attnviz tokenize` wrote them into the corpus. If the app's tokenizer changes,
tst_bundledvectors fails on this file: the table would no longer match what the app looks up.
"""
import re
import sys

CHECKS = [lambda s: "\u2019" in s, lambda s: "'" in s, lambda s: re.search("[éèêëàâçïôüÉ]", s),
          lambda s: re.search(r"\d", s), lambda s: re.search("[æœ]", s), lambda s: "\u2014" in s]


def main():
    with open(sys.argv[1], encoding="utf-8") as f:
        sentences = f.read().split("\n")[:-1]
    with open(sys.argv[2], encoding="utf-8") as f:
        tokens = f.read().split("\n")[:-1]
    if len(sentences) != len(tokens):
        sys.exit("corpus_sample.py: sentences and corpus differ in length")
    keep = set(range(0, len(sentences), 5000))
    for check in CHECKS:
        found = 0
        for i, s in enumerate(sentences):
            if check(s) and len(s) < 200:
                keep.add(i)
                found += 1
                if found == 4:
                    break
    with open(sys.argv[3], "w", encoding="utf-8") as out:
        for i in sorted(keep):
            out.write(sentences[i] + "\t" + tokens[i] + "\n")


if __name__ == "__main__":
    main()
