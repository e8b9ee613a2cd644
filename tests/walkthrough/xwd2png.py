#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-3.0-or-later
# An X window dump (xwd -root, 24 or 32 bits per pixel, ZPixmap) as a PNG, with the standard library
# only: the walk-through's screenshots where ImageMagick is not installed.
#   xwd -root -silent | python3 xwd2png.py OUT.png
import struct
import sys
import zlib


def main():
    data = sys.stdin.buffer.read()
    (header_size, _version, pixmap_format, depth, width, height, _xoff, byte_order, _unit, _bit_order,
     _pad, bits_per_pixel, bytes_per_line, _visual, red_mask, green_mask, blue_mask) = struct.unpack(">17I", data[:68])
    ncolors = struct.unpack(">I", data[76:80])[0]
    if pixmap_format != 2 or bits_per_pixel not in (24, 32):
        sys.exit(f"xwd2png: only 24- or 32-bit ZPixmap dumps (this one: format {pixmap_format}, {bits_per_pixel} bpp)")
    step = bits_per_pixel // 8
    pixels = data[header_size + 12 * ncolors:]
    # the byte of each channel within a little- or big-endian pixel
    def index(mask):
        shift = (mask & -mask).bit_length() - 1
        return shift // 8 if byte_order == 0 else step - 1 - shift // 8
    r, g, b = index(red_mask), index(green_mask), index(blue_mask)
    rows = []
    for y in range(height):
        line = pixels[y * bytes_per_line:y * bytes_per_line + step * width]
        rgb = bytearray(3 * width)
        rgb[0::3] = line[r::step]
        rgb[1::3] = line[g::step]
        rgb[2::3] = line[b::step]
        rows.append(b"\0" + bytes(rgb))

    def chunk(kind, body):
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body) & 0xFFFFFFFF)

    png = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
    png += chunk(b"IDAT", zlib.compress(b"".join(rows), 6)) + chunk(b"IEND", b"")
    with open(sys.argv[1], "wb") as f:
        f.write(png)


if __name__ == "__main__":
    main()
