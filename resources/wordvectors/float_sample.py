# SPDX-License-Identifier: GPL-3.0-or-later
"""Writes a small float32 sample of a fastText .vec file, for the quantization test.

Usage: python3 float_sample.py MODEL.vec SAMPLE.vec

Keeps, in file order, the words of the seed sentences and of the tests (WORDS below) and every
STRIDE-th word of the first LIMIT lines, with the numbers exactly as fastText printed them. The
test compares cosines in this sample with the same words in the int8 table.
"""
import sys

WORDS = set("""i must go back to my ship and crew we process your order journey starts with one step
king queen boat vessel man woman sea sail god lord""".split())
STRIDE, LIMIT = 100, 50000


def main():
    src, dst = sys.argv[1], sys.argv[2]
    rows = []
    with open(src, encoding="utf-8") as f:
        header = f.readline().split()
        dim = int(header[1])
        for n, line in enumerate(f):
            word = line.split(" ", 1)[0]
            if (n < LIMIT and n % STRIDE == 1) or word in WORDS:
                rows.append(line.rstrip("\n").rstrip(" "))
    with open(dst, "w", encoding="utf-8") as out:
        out.write(f"{len(rows)} {dim}\n")
        for r in rows:
            out.write(r + "\n")


if __name__ == "__main__":
    main()
