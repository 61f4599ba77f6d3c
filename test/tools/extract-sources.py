#!/usr/bin/env python3
"""Reads a Kiln artifact (docs/artifact.md) without Kiln, for lit tests.

Usage:
  extract-sources.py ARTIFACT DIR
      Writes every file of the "sources" section (runtime/Artifact.h
      packSources: u32 count, then per file u32 path length, path, u64 size,
      contents) under DIR.
  extract-sources.py --flip-byte SECTION ARTIFACT OUT
      Copies ARTIFACT to OUT with one byte in the middle of SECTION
      inverted, leaving the section table (and its SHA-256) as it was.

The header is 16 bytes (magic "KILNART\\0", u32 version, u32 section count),
then 88-byte table entries: 32-byte NUL-padded name, u64 offset, u64 size,
u32 alignment, u32 reserved, 32-byte SHA-256. Integers are little-endian.
"""
import os
import struct
import sys


def sections(data):
    if data[:8] != b"KILNART\0":
        sys.exit("not a Kiln artifact (bad magic)")
    version, count = struct.unpack_from("<II", data, 8)
    if version != 1:
        sys.exit("format version %d, this script reads 1" % version)
    table = {}
    for i in range(count):
        entry = 16 + 88 * i
        name = data[entry:entry + 32].rstrip(b"\0").decode("ascii")
        offset, size = struct.unpack_from("<QQ", data, entry + 32)
        table[name] = (offset, size)
    return table


def extract(artifact, directory):
    data = open(artifact, "rb").read()
    table = sections(data)
    if "sources" not in table:
        sys.exit("%s has no 'sources' section" % artifact)
    offset, size = table["sources"]
    archive = data[offset:offset + size]
    (count,) = struct.unpack_from("<I", archive, 0)
    pos = 4
    for _ in range(count):
        (length,) = struct.unpack_from("<I", archive, pos)
        path = archive[pos + 4:pos + 4 + length].decode("utf-8")
        pos += 4 + length
        (contents_size,) = struct.unpack_from("<Q", archive, pos)
        pos += 8
        parts = path.split("/")
        if any(p in ("", ".", "..") for p in parts):
            sys.exit("unsafe path in the sources archive: %r" % path)
        target = os.path.join(directory, *parts)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with open(target, "wb") as out:
            out.write(archive[pos:pos + contents_size])
        pos += contents_size
    if pos != len(archive):
        sys.exit("the sources archive has %d trailing bytes" %
                 (len(archive) - pos))


def flip_byte(section, artifact, output):
    data = bytearray(open(artifact, "rb").read())
    table = sections(data)
    if section not in table or table[section][1] == 0:
        sys.exit("%s has no non-empty section '%s'" % (artifact, section))
    offset, size = table[section]
    data[offset + size // 2] ^= 0xFF
    with open(output, "wb") as out:
        out.write(data)


def main():
    args = sys.argv[1:]
    if len(args) == 4 and args[0] == "--flip-byte":
        flip_byte(args[1], args[2], args[3])
    elif len(args) == 2:
        extract(args[0], args[1])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
