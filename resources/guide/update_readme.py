#!/usr/bin/python3
# SPDX-License-Identifier: GPL-3.0-or-later
# Copies the user guide (guide.md, shown by Help ▸ attnviz guide) into the README's tour, between its
# "guide: begin" and "guide: end" markers, every heading one level down (## -> ###).
# tests/ui/tst_lecturer.cpp (readmeTourIsTheGuide) fails until this has been run after an edit.
import pathlib
import re

here = pathlib.Path(__file__).resolve().parent
readme = here.parent.parent / "README.md"
begin = "<!-- guide: begin (resources/guide/guide.md, one level down) -->\n"
end = "<!-- guide: end -->"
guide = (here / "guide.md").read_text(encoding="utf-8")
text = readme.read_text(encoding="utf-8")
a = text.index(begin) + len(begin)
b = text.index(end)
readme.write_text(text[:a] + re.sub(r"^(#+) ", r"#\1 ", guide, flags=re.M) + text[b:], encoding="utf-8")
