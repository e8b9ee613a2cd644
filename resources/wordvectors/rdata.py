# SPDX-License-Identifier: GPL-3.0-or-later
"""A small reader for R's lazy-load data bases (data/Rdata.rdx + data/Rdata.rdb), without R.

Enough of R's serialization format (XDR, versions 2 and 3) to read character vectors, lists and
data frames of the kind CRAN data packages ship. Layout (R's src/main/serialize.c, lazyload):

  Rdata.rdx  gzip-compressed serialized list(variables=, references=, compressed=); each entry of
             `variables` is c(offset, length) into Rdata.rdb
  Rdata.rdb  at each offset: u32 big-endian uncompressed length, then, when `compressed` is
             TRUE, a zlib stream; when 2 or 3, one type byte ('Z' zlib, '2' bzip2, 'X' xz,
             '0' stored) and the stream
  stream     b"X\\n", int version, int writer R version, int minimal R version,
             (version 3: int n, n bytes native encoding), then one item
  item       int flags: type = flags & 0xff, object = bit 8, attributes = bit 9, tag = bit 10

Usage: python3 rdata.py PKGDIR [NAME...]  prints the named character objects (all when none).
"""
import bz2
import gzip
import lzma
import struct
import sys
import zlib

NILVALUE, SYM, LIST, CLO, ENV, PROM, LANG = 254, 1, 2, 3, 4, 5, 6
CHAR, LGL, INT, REAL, CPLX, STR, VEC, EXPR, RAW = 9, 10, 13, 14, 15, 16, 19, 20, 24
REF, GLOBALENV, UNBOUND, MISSINGARG, BASENAMESPACE = 255, 253, 252, 251, 250
NAMESPACE, PACKAGE, PERSIST, EMPTYENV, BASEENV = 249, 248, 247, 242, 241
ATTRLANG, ATTRLIST, ALTREP = 240, 239, 238


class RObject:
    """A vector or pairlist with R attributes (names, class, row.names...)."""

    def __init__(self, rtype, value, attributes=None):
        self.rtype = rtype
        self.value = value
        self.attributes = attributes or {}

    def __repr__(self):
        return f"RObject(type={self.rtype}, len={len(self.value) if hasattr(self.value, '__len__') else '?'})"


class Reader:
    def __init__(self, data):
        self.data = data
        self.pos = 0
        self.refs = []

    def int(self):
        (v,) = struct.unpack_from(">i", self.data, self.pos)
        self.pos += 4
        return v

    def length(self):
        n = self.int()
        if n == -1:
            hi, lo = self.int(), self.int()
            n = (hi << 32) + (lo & 0xFFFFFFFF)
        return n

    def header(self):
        if self.data[:2] != b"X\n":
            raise ValueError("not an XDR R serialization stream")
        self.pos = 2
        version = self.int()
        self.int()
        self.int()
        if version == 3:
            n = self.int()
            self.pos += n
        elif version != 2:
            raise ValueError(f"unsupported serialization version {version}")

    def attributes(self, flags):
        if flags & (1 << 9):
            return self.pairlist_to_dict(self.item())
        return {}

    @staticmethod
    def pairlist_to_dict(obj):
        out = {}
        if isinstance(obj, RObject) and obj.rtype == LIST:
            for tag, value in obj.value:
                out[tag] = value
        return out

    def item(self):
        flags = self.int()
        t = flags & 0xFF
        if t == NILVALUE or t in (EMPTYENV, BASEENV, GLOBALENV, UNBOUND, MISSINGARG, BASENAMESPACE):
            return None
        if t == REF:
            index = flags >> 8
            if index == 0:
                index = self.int()
            return self.refs[index - 1]
        if t == SYM:
            name = self.item()
            self.refs.append(name)
            return name
        if t in (NAMESPACE, PACKAGE, PERSIST):
            # a string vector follows
            self.int()  # 0
            n = self.int()
            names = [self.item() for _ in range(n)]
            self.refs.append(names)
            return names
        if t == ENV:
            locked = self.int()
            env = RObject(ENV, None)
            self.refs.append(env)
            enclos, frame, hashtab, attrib = self.item(), self.item(), self.item(), self.item()
            env.value = (enclos, frame, hashtab, attrib, locked)
            return env
        if t in (LIST, LANG, CLO, PROM, ATTRLIST, ATTRLANG):
            items = []
            attrs = {}
            while True:
                if flags & (1 << 9):
                    attrs.update(self.pairlist_to_dict(self.item()))
                tag = self.item() if flags & (1 << 10) else None
                car = self.item()
                items.append((tag, car))
                # CDR: read the next flags inline to keep pairlists iterative
                nflags = self.int()
                nt = nflags & 0xFF
                if nt in (LIST, LANG, ATTRLIST, ATTRLANG) and t in (LIST, ATTRLIST):
                    flags = nflags
                    continue
                self.pos -= 4
                self.item()
                break
            return RObject(LIST, items, attrs)
        if t == CHAR:
            n = self.int()
            if n == -1:
                return None  # NA_character_
            s = self.data[self.pos:self.pos + n]
            self.pos += n
            return s.decode("utf-8", errors="replace") if (flags >> 12) & 0xF else s.decode("latin-1")
        if t in (LGL, INT):
            n = self.length()
            v = list(struct.unpack_from(f">{n}i", self.data, self.pos))
            self.pos += 4 * n
            return RObject(t, v, self.attributes(flags))
        if t == REAL:
            n = self.length()
            v = list(struct.unpack_from(f">{n}d", self.data, self.pos))
            self.pos += 8 * n
            return RObject(t, v, self.attributes(flags))
        if t == CPLX:
            n = self.length()
            self.pos += 16 * n
            return RObject(t, None, self.attributes(flags))
        if t == RAW:
            n = self.length()
            v = self.data[self.pos:self.pos + n]
            self.pos += n
            return RObject(t, v, self.attributes(flags))
        if t in (STR, VEC, EXPR):
            n = self.length()
            v = [self.item() for _ in range(n)]
            return RObject(t, v, self.attributes(flags))
        if t == ALTREP:
            info, state, attr = self.item(), self.item(), self.item()
            cls = info.value[0][1] if isinstance(info, RObject) else None
            return RObject(ALTREP, (cls, state), self.pairlist_to_dict(attr))
        raise ValueError(f"unsupported R type {t} at byte {self.pos - 4}")


def unserialize(data):
    r = Reader(data)
    r.header()
    return r.item()


def decompress_block(block, compressed):
    (n,) = struct.unpack_from(">I", block, 0)
    if compressed in (2, 3):
        kind, payload = block[4:5], block[5:]
        if kind == b"Z":
            out = zlib.decompress(payload)
        elif kind == b"2":
            out = bz2.decompress(payload)
        elif kind == b"X":
            out = lzma.decompress(payload)
        elif kind == b"0":
            out = payload
        else:
            raise ValueError(f"unknown compression type {kind!r}")
    else:
        out = zlib.decompress(block[4:])
    if len(out) != n:
        raise ValueError(f"decompressed {len(out)} bytes, header says {n}")
    return out


def load_rdata(pkgdir):
    """Returns {name: object} for every object in PKGDIR/data/Rdata.{rdx,rdb}."""
    with gzip.open(f"{pkgdir}/data/Rdata.rdx", "rb") as f:
        index = unserialize(f.read())
    parts = {name: value for name, value in zip(index.attributes["names"].value, index.value)}
    compressed = parts["compressed"].value[0]
    if isinstance(compressed, bool) or compressed in (0, 1):
        compressed = 1
    variables = parts["variables"]
    with open(f"{pkgdir}/data/Rdata.rdb", "rb") as f:
        rdb = f.read()
    out = {}
    for name, loc in zip(variables.attributes["names"].value, variables.value):
        offset, length = int(loc.value[0]), int(loc.value[1])
        out[name] = unserialize(decompress_block(rdb[offset:offset + length], compressed))
    return out


def character_lines(obj):
    """The strings of a character vector (NA dropped)."""
    if isinstance(obj, RObject) and obj.rtype == STR:
        return [s for s in obj.value if s is not None]
    return []


if __name__ == "__main__":
    objects = load_rdata(sys.argv[1])
    names = sys.argv[2:] or sorted(objects)
    for name in names:
        for line in character_lines(objects[name]):
            print(line)
