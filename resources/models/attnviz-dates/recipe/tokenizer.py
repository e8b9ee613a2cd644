# SPDX-License-Identifier: GPL-3.0-or-later
"""Trains spiece.model: a character-level SentencePiece model laid out as T5's (pad 0, </s> 1,
<unk> 2, no <s>) on dates.tokenizer_corpus(), with no normalisation (case kept), no dummy prefix and
no byte fallback, so that every character is one piece: each digit and '-' of an ISO target is one
decoder step, and source token i is source character i (a space is '▁').

Usage: python3 tokenizer.py OUTDIR
"""
import os
import sys
import tempfile

import sentencepiece as spm

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import dates  # noqa: E402


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    lines = dates.tokenizer_corpus()
    chars = sorted(set("".join(lines)))
    out = os.path.abspath(out)
    cwd = os.getcwd()
    with tempfile.TemporaryDirectory() as tmp:
        # relative names: the model records its trainer's input and prefix, and the same bytes come out anywhere
        os.chdir(tmp)
        with open("train.txt", "w", encoding="utf-8") as f:
            f.write("\n".join(lines) + "\n")
        spm.SentencePieceTrainer.train(
            input="train.txt", model_prefix="spiece", model_type="char",
            vocab_size=len(chars) + 3, pad_id=0, eos_id=1, unk_id=2, bos_id=-1,
            normalization_rule_name="identity", add_dummy_prefix=False, remove_extra_whitespaces=True,
            character_coverage=1.0, byte_fallback=False, num_threads=1, minloglevel=2)
        data = open("spiece.model", "rb").read()
        os.chdir(cwd)
    with open(os.path.join(out, "spiece.model"), "wb") as f:
        f.write(data)
    sp = spm.SentencePieceProcessor(model_file=os.path.join(out, "spiece.model"))
    for line in lines:
        ids = sp.encode(line)
        assert len(ids) == len(line) and 2 not in ids, line
    print(f"tokenizer.py: {sp.get_piece_size()} pieces", file=sys.stderr)


if __name__ == "__main__":
    main()
