# SPDX-License-Identifier: GPL-3.0-or-later
"""Plain English sentences from the Debian packages unpacked under ROOT, one sentence a line.

Usage: python3 extract_corpus.py ROOT SWORD_IMP_DIR > sentences.txt

ROOT is where every .deb of sources.txt was extracted with `dpkg-deb -x`; SWORD_IMP_DIR holds
<Module>.imp, the output of `mod2imp <Module>` for each SWORD module. Output order is fixed (the
order of SOURCES below, then document order); a sentence seen before, after whitespace is
normalized, is dropped (mod2imp repeats whole commentary blocks, dictionaries repeat phrases).
Per-source counts go to stderr.
"""
import gzip
import html
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import rdata  # noqa: E402

SENTENCE_END = re.compile(r"(?<=[.!?])[\"'\u201d\u2019)\]]*\s+(?=[\"'\u201c\u2018(\[]*[A-Z0-9])")
SPACES = re.compile(r"\s+")


def sentences(paragraph):
    paragraph = SPACES.sub(" ", paragraph).strip()
    if not paragraph:
        return []
    return [s.strip() for s in SENTENCE_END.split(paragraph) if s.strip()]


def paragraphs(text):
    """Blank-line separated blocks, lines joined."""
    return [p for p in re.split(r"\n\s*\n", text) if p.strip()]


# --- SWORD modules (OSIS markup, as mod2imp prints it) ---------------------------------------------
OSIS_DROP = re.compile(r"<(note|reference)\b[^>]*>.*?</\1>", re.S)
OSIS_BREAK = re.compile(r"<(?:div|p|l|lg|title|chapter|lb|row|cell|table|item|list)\b[^>]*>|</(?:title|l|p|cell|row|item)>")
TAG = re.compile(r"<[^>]*>")


def sword_records(path):
    key, lines = None, []
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            if line.startswith("$$$"):
                if key is not None:
                    yield key, "".join(lines)
                key, lines = line[3:].strip(), []
            else:
                lines.append(line)
    if key is not None:
        yield key, "".join(lines)


def sword_text(path):
    seen = set()
    for _key, body in sword_records(path):
        body = body.strip()
        if not body or body in seen or body.startswith("Error reading"):
            continue
        seen.add(body)
        body = OSIS_DROP.sub(" ", body)
        body = OSIS_BREAK.sub("\n\n", body)
        body = html.unescape(TAG.sub("", body))
        for p in paragraphs(body):
            yield from sentences(p)


# --- WordNet: "lemma, lemma: gloss" for every synset ------------------------------------------------
def wordnet_text(root):
    for pos in ("noun", "verb", "adj", "adv"):
        with open(os.path.join(root, "usr/share/wordnet", "data." + pos), encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.startswith("  ") or "|" not in line:
                    continue  # licence header
                fields, gloss = line.split("|", 1)
                parts = fields.split()
                count = int(parts[3], 16)
                lemmas = [re.sub(r"\(.*\)$", "", parts[4 + 2 * i]).replace("_", " ") for i in range(count)]
                yield ", ".join(lemmas) + ": " + SPACES.sub(" ", gloss).strip()


# --- R data: Jane Austen's six novels, Moby-Dick ------------------------------------------------------
def gutenberg_body(text):
    start = re.search(r"\*\*\* ?START OF[^\n]*\n", text)
    end = re.search(r"\*\*\* ?END OF", text)
    if start:
        text = text[start.end():end.start() if end else None]
    return text


def rdata_text(pkgdir, names=None):
    objects = rdata.load_rdata(pkgdir)
    for name in names or sorted(objects):
        text = gutenberg_body("\n".join(rdata.character_lines(objects[name])))
        for p in paragraphs(text):
            yield from sentences(p)


# --- dictd databases ---------------------------------------------------------------------------------
GCIDE_SOURCE = re.compile(r"^\s*\[(?:1913 Webster|PJC|WordNet[^\]]*|Century[^\]]*|Webster 1913 Suppl\.|[A-Z]{2,5})\]\s*$")
GCIDE_HEAD = re.compile(r"\\[^\\\n]*\\")


def dictd_text(path, gcide=False):
    with gzip.open(path, "rt", encoding="utf-8", errors="replace") as f:
        text = f.read()
    lines = []
    for line in text.split("\n"):
        if line.startswith("00-database") or line.startswith("  00-database"):
            continue
        if gcide:
            if GCIDE_SOURCE.match(line):
                lines.append("")
                continue
            line = GCIDE_HEAD.sub(" ", line)  # pronunciation \Ab*jure"\
        lines.append(line.replace("{", "").replace("}", ""))
    for p in paragraphs("\n".join(lines)):
        yield from sentences(p)


def sources(root, impdir):
    sword = lambda m: (lambda: sword_text(os.path.join(impdir, m + ".imp")))  # noqa: E731
    dictd = os.path.join(root, "usr/share/dictd")
    rlib = os.path.join(root, "usr/lib/R/site-library")
    return [
        ("wordnet-base", lambda: wordnet_text(root)),
        ("sword-text-web", sword("engWEB2015eb")),
        ("sword-text-kjv", sword("engKJV2006eb")),
        ("sword-comm-mhcc", sword("MHCC")),
        ("sword-comm-tdavid", sword("TDavid")),
        ("sword-comm-scofield", sword("Scofield")),
        ("r-cran-janeaustenr", lambda: rdata_text(os.path.join(rlib, "janeaustenr"))),
        ("r-cran-tokenizers", lambda: rdata_text(os.path.join(rlib, "tokenizers"), ["mobydick"])),
        ("dict-jargon", lambda: dictd_text(os.path.join(dictd, "jargon.dict.dz"))),
        ("dict-devil", lambda: dictd_text(os.path.join(dictd, "devil.dict.dz"))),
        ("dict-gcide", lambda: dictd_text(os.path.join(dictd, "gcide.dict.dz"), gcide=True)),
    ]


def main():
    root, impdir = sys.argv[1], sys.argv[2]
    seen = set()
    out = sys.stdout
    for name, gen in sources(root, impdir):
        kept = dropped = 0
        for s in gen():
            s = SPACES.sub(" ", s).strip()
            if not s:
                continue
            if s in seen:
                dropped += 1
                continue
            seen.add(s)
            out.write(s + "\n")
            kept += 1
        print(f"{name}: {kept} sentences kept, {dropped} duplicates dropped", file=sys.stderr)


if __name__ == "__main__":
    main()
