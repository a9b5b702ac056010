"""Whether a file in a driver's cache is whole, judged by its own structure.

A checksum taken when a build finished cannot tell damage from a rebuild: another process
building the same program rewrites its files with other bytes (a relinked ``.so`` holds new
temporary names, a ``program.bc`` the name of its temporary source). A truncated or
overwritten file breaks the structure its header promises.
"""

from __future__ import annotations

import struct


def elf_complete(data: bytes) -> bool:
    """Whether a 64-bit little-endian ELF file holds every segment and section header its
    header promises (a truncated or overwritten machine-code cache file does not)."""
    if len(data) < 64 or data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        return False
    phoff, shoff = struct.unpack_from("<QQ", data, 0x20)
    phentsize, phnum, shentsize, shnum = struct.unpack_from("<HHHH", data, 0x36)
    if shoff + shentsize * shnum > len(data) or phoff + phentsize * phnum > len(data):
        return False
    for k in range(phnum):
        offset, _, _, filesz = struct.unpack_from("<QQQQ", data, phoff + k * phentsize + 8)
        if offset + filesz > len(data):
            return False
    return True


_BITCODE_WRAPPER = b"\xde\xc0\x17\x0b"
_BITCODE_MAGIC = b"BC\xc0\xde"


def bitcode_complete(data: bytes) -> bool:
    """Whether an LLVM bitcode file holds every top-level block its block headers promise,
    to the last byte (a truncated or overwritten ``program.bc`` does not)."""
    if data[:4] == _BITCODE_WRAPPER:
        if len(data) < 20:
            return False
        offset, size = struct.unpack_from("<II", data, 8)
        if offset + size > len(data):
            return False
        data = data[offset:offset + size]
    if len(data) < 8 or len(data) % 4 or data[:4] != _BITCODE_MAGIC:
        return False
    stream = _BitStream(data, position=32)
    end = len(data) * 8
    while stream.position < end:
        # a top-level entry is ENTER_SUBBLOCK (id 1 at width 2): block id, abbreviation
        # width, then, 32-bit aligned, the block's length in 32-bit words
        if stream.fixed(2) != 1 or stream.vbr(8) is None or stream.vbr(4) is None:
            return False
        stream.position = (stream.position + 31) // 32 * 32
        if stream.position + 32 > end:
            return False
        stream.position += 32 + 32 * stream.fixed(32)
    return stream.position == end


class _BitStream:
    """Reads LLVM's bitstream fields: least significant bit first."""

    def __init__(self, data: bytes, position: int) -> None:
        self.data, self.position = data, position

    def fixed(self, width: int) -> int:
        start = self.position // 8
        word = int.from_bytes(self.data[start:start + 8], "little") >> (self.position % 8)
        self.position += width
        return word & ((1 << width) - 1)

    def vbr(self, width: int) -> int | None:
        """A variable-width integer; None past 64 bits (not bitcode)."""
        value, shift, more = 0, 0, 1 << (width - 1)
        while shift <= 64:
            chunk = self.fixed(width)
            value |= (chunk & (more - 1)) << shift
            if not chunk & more:
                return value
            shift += width - 1
        return None
