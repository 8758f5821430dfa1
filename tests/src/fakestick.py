#!/usr/bin/env python3
"""A counterfeit flash stick as one file served over FUSE (fusepy).

The file `MOUNTPOINT/stick` announces ANNOUNCED bytes but stores only REAL
bytes, in a sparse BACKING file. Beyond the real size it behaves as MODE:

  wraparound  byte offset o is stored at o % REAL (REAL a power of two for
              the classic fake: the high address bits are not connected)
  limbo       writes beyond REAL are dropped; reads there return zeros
  genuine     no lie (ANNOUNCED == REAL)
  eio         a stick dying while written: writes reaching REAL or beyond
              fail with EIO; reads work (ANNOUNCED bytes are stored)
  bitflip     a cell that does not hold: ANNOUNCED bytes are stored, but
              the byte at offset REAL reads back with its bit 0x40 flipped

A write cache of CACHE bytes (whole 4 KiB pages, last written first out)
answers reads of the pages written last, like the caches fakes use to pass
read-after-write checks. `losetup --direct-io=on` over the file gives a block
device that lies about its size.

A RATE (bytes per second, 0: unlimited) slows the writes down to a USB
stick's pace (`cargo xtask bench --batch`).

Usage: fakestick.py MOUNTPOINT BACKING MODE ANNOUNCED REAL [CACHE [RATE]]
"""

import collections
import errno
import os
import stat
import sys
import threading
import time

from fuse import FUSE, FuseOSError, Operations

PAGE = 4096


class FakeStick(Operations):
    def __init__(self, backing, mode, announced, real, cache, rate=0):
        self.rate = rate
        self.fd = os.open(backing, os.O_RDWR | os.O_CREAT, 0o600)
        os.ftruncate(self.fd, announced if mode in ("eio", "bitflip") else real)
        self.mode = mode
        self.announced = announced
        self.real = real
        self.cache_pages = cache // PAGE
        self.cache = collections.OrderedDict()
        self.mutex = threading.Lock()
        self.now = time.time()

    # Mapping of one page-aligned piece of I/O.
    def _target(self, off):
        if self.mode == "wraparound":
            return off % self.real
        if off < self.real or self.mode in ("eio", "bitflip"):
            return off
        return None

    def _pieces(self, off, size):
        end = off + size
        while off < end:
            n = min(end, (off // PAGE + 1) * PAGE) - off
            yield off, n
            off += n

    def getattr(self, path, fh=None):
        if path == "/":
            return dict(st_mode=stat.S_IFDIR | 0o755, st_nlink=2,
                        st_ctime=self.now, st_mtime=self.now, st_atime=self.now)
        if path == "/stick":
            return dict(st_mode=stat.S_IFREG | 0o600, st_nlink=1,
                        st_size=self.announced, st_blocks=self.announced // 512,
                        st_ctime=self.now, st_mtime=self.now, st_atime=self.now)
        raise FuseOSError(errno.ENOENT)

    def readdir(self, path, fh):
        return [".", "..", "stick"]

    def open(self, path, flags):
        if path != "/stick":
            raise FuseOSError(errno.ENOENT)
        return 0

    def truncate(self, path, length, fh=None):
        if length != self.announced:
            raise FuseOSError(errno.EPERM)

    def _dying(self, off, size):
        if self.mode == "eio" and off + size > self.real:
            raise FuseOSError(errno.EIO)

    def read(self, path, size, off, fh):
        size = max(0, min(size, self.announced - off))
        out = []
        with self.mutex:
            for o, n in self._pieces(off, size):
                page, within = o - o % PAGE, o % PAGE
                if page in self.cache:
                    out.append(self.cache[page][within:within + n])
                    continue
                t = self._target(o)
                if t is None:
                    out.append(bytes(n))
                else:
                    data = os.pread(self.fd, n, t)
                    out.append(data + bytes(n - len(data)))
        data = b"".join(out)
        if self.mode == "bitflip" and off <= self.real < off + len(data):
            bad = bytearray(data)
            bad[self.real - off] ^= 0x40
            data = bytes(bad)
        return data

    def write(self, path, data, off, fh):
        if off + len(data) > self.announced:
            raise FuseOSError(errno.ENOSPC)
        self._dying(off, len(data))
        with self.mutex:
            pos = 0
            for o, n in self._pieces(off, len(data)):
                piece = data[pos:pos + n]
                pos += n
                t = self._target(o)
                if t is not None:
                    os.pwrite(self.fd, piece, t)
                if self.cache_pages:
                    page, within = o - o % PAGE, o % PAGE
                    if page in self.cache:
                        cur = bytearray(self.cache.pop(page))
                    else:
                        t0 = self._target(page)
                        cur = bytearray(PAGE if t0 is None else os.pread(self.fd, PAGE, t0).ljust(PAGE, b"\0"))
                    cur[within:within + n] = piece
                    self.cache[page] = bytes(cur)
                    while len(self.cache) > self.cache_pages:
                        self.cache.popitem(last=False)
        if self.rate:
            time.sleep(len(data) / self.rate)
        return len(data)

    def flush(self, path, fh):
        return 0

    def fsync(self, path, datasync, fh):
        return 0

    def release(self, path, fh):
        return 0


def main():
    if len(sys.argv) not in (6, 7, 8):
        sys.exit(__doc__)
    mnt, backing, mode = sys.argv[1], sys.argv[2], sys.argv[3]
    announced, real = int(sys.argv[4]), int(sys.argv[5])
    cache = int(sys.argv[6]) if len(sys.argv) >= 7 else 0
    rate = int(sys.argv[7]) if len(sys.argv) == 8 else 0
    modes = ("wraparound", "limbo", "genuine", "eio", "bitflip")
    if mode not in modes or real < 0 or (real <= 0 and mode != "bitflip") or real > announced:
        sys.exit(__doc__)
    FUSE(FakeStick(backing, mode, announced, real, cache, rate), mnt, foreground=True,
         nothreads=True, direct_io=True, big_writes=True, max_write=1 << 20,
         max_read=1 << 20, allow_other=True)


if __name__ == "__main__":
    main()
