#!/usr/bin/env python3
"""png_check.py -- validates a PNG with the standard library only (signature, chunk CRCs,
IHDR, zlib stream, row filters) and prints "WIDTHxHEIGHT DIGEST" of its RGB pixels, so that
two files of the same image compare equal however they were compressed.
usage: png_check.py FILE.png"""
import hashlib
import struct
import sys
import zlib


def decode(path):
    data = open(path, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("bad signature")
    pos, ihdr, idat, end = 8, None, b"", False
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos:pos + 4])
        ctype = data[pos + 4:pos + 8]
        body = data[pos + 8:pos + 8 + length]
        (crc,) = struct.unpack(">I", data[pos + 8 + length:pos + 12 + length])
        if zlib.crc32(ctype + body) & 0xFFFFFFFF != crc:
            raise ValueError("bad CRC in %r" % ctype)
        if ctype == b"IHDR":
            ihdr = struct.unpack(">IIBBBBB", body)
        elif ctype == b"IDAT":
            idat += body
        elif ctype == b"IEND":
            end = True
            break
        pos += 12 + length
    if not ihdr or not end:
        raise ValueError("missing IHDR or IEND")
    w, h, depth, colour, _, _, interlace = ihdr
    if depth != 8 or colour != 2 or interlace != 0:
        raise ValueError("not 8-bit RGB, non-interlaced: %r" % (ihdr,))
    raw = zlib.decompress(idat)
    stride = 3 * w
    if len(raw) != h * (stride + 1):
        raise ValueError("image data has %d bytes, expected %d" % (len(raw), h * (stride + 1)))
    out, prev = bytearray(), bytearray(stride)
    for y in range(h):
        f = raw[y * (stride + 1)]
        row = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = row[i - 3] if i >= 3 else 0
            b = prev[i]
            c = prev[i - 3] if i >= 3 else 0
            if f == 1:
                row[i] = (row[i] + a) & 255
            elif f == 2:
                row[i] = (row[i] + b) & 255
            elif f == 3:
                row[i] = (row[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                row[i] = (row[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
            elif f != 0:
                raise ValueError("bad filter %d" % f)
        out += row
        prev = row
    return w, h, hashlib.sha256(bytes(out)).hexdigest()


if __name__ == "__main__":
    try:
        w, h, digest = decode(sys.argv[1])
    except (OSError, ValueError, zlib.error) as e:
        print("%s: %s" % (sys.argv[1], e), file=sys.stderr)
        sys.exit(1)
    print("%dx%d %s" % (w, h, digest))
