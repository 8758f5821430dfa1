#!/usr/bin/env python3
"""A disk with a volatile write cache whose power can be cut, as one file
served over FUSE (fusepy).

`MOUNTPOINT/disk` has the size of the image file IMAGE, which holds what the
medium keeps. A write is acknowledged into the cache (held in memory; reads
see it); an fsync writes the cache through to IMAGE in issue order and
fsyncs IMAGE. Through `losetup --direct-io=on MOUNTPOINT/disk` the loop
device's flushes reach this process as fsync.

Mutating operations (writes and fsyncs of `disk`) are numbered from 0.
When operation CUT_AT arrives the power goes: a subset of the 512-byte
blocks written since the last fsync, drawn from SEED, reaches IMAGE (each
block of each write kept or dropped on its own: the keep probability is 0
for one seed in eight, 1 for another, else uniform in [0, 1]), and
operation CUT_AT and every later read, write and fsync of `disk` fail with
EIO. CUT_AT -1 never cuts; at unmount the cache is then written through (a
clean shutdown), while an uncut CUT_AT >= 0 cuts at unmount (the power
went after the last operation).

Writing `K SEED` to `MOUNTPOINT/cut` sets the cut point to operation K (an
absolute number, as in `stats`) and the seed, for a test that learns where
it stands first.

`MOUNTPOINT/stats` reads as one line of counters:
`ops=N writes=N fsyncs=N cut=0|1 kept=BLOCKS dropped=BLOCKS at=I,J,...`
(`at`: the operation numbers of the fsyncs).

Usage: powercut.py MOUNTPOINT IMAGE CUT_AT SEED
"""

import errno
import os
import random
import stat
import sys
import threading
import time

from fuse import FUSE, FuseOSError, Operations

BLOCK = 512


class PowerCut(Operations):
    def __init__(self, image, cut_at, seed):
        self.fd = os.open(image, os.O_RDWR)
        self.size = os.fstat(self.fd).st_size
        self.cut_at = cut_at
        self.seed = seed
        self.pending = []  # (offset, bytes), in issue order
        self.cache = {}  # block index -> latest unflushed bytes of that block
        self.ops = self.writes = self.fsyncs = 0
        self.fsync_ops = []  # the operation numbers of the fsyncs
        self.cut = False
        self.kept = self.dropped = 0
        self.mutex = threading.Lock()
        self.now = time.time()

    def stats(self):
        return ("ops=%d writes=%d fsyncs=%d cut=%d kept=%d dropped=%d at=%s\n" % (
            self.ops, self.writes, self.fsyncs, int(self.cut), self.kept,
            self.dropped, ",".join(map(str, self.fsync_ops)))).encode()

    def getattr(self, path, fh=None):
        base = dict(st_nlink=1, st_ctime=self.now, st_mtime=self.now,
                    st_atime=self.now)
        if path == "/":
            return dict(base, st_mode=stat.S_IFDIR | 0o755, st_nlink=2)
        if path == "/disk":
            return dict(base, st_mode=stat.S_IFREG | 0o600, st_size=self.size,
                        st_blocks=self.size // 512)
        if path == "/stats":
            return dict(base, st_mode=stat.S_IFREG | 0o444, st_size=4096)
        if path == "/cut":
            return dict(base, st_mode=stat.S_IFREG | 0o200, st_size=0)
        raise FuseOSError(errno.ENOENT)

    def readdir(self, path, fh):
        return [".", "..", "disk", "stats", "cut"]

    def open(self, path, flags):
        if path not in ("/disk", "/stats", "/cut"):
            raise FuseOSError(errno.ENOENT)
        return 0

    def truncate(self, path, length, fh=None):
        if path == "/cut":
            return
        if length != self.size:
            raise FuseOSError(errno.EPERM)

    # The power supply.
    def _admit(self):
        """Counts one mutating operation; cuts the power at CUT_AT."""
        index = self.ops
        self.ops += 1
        if index == self.cut_at and not self.cut:
            self._cut_now()
        if self.cut:
            raise FuseOSError(errno.EIO)

    def _cut_now(self):
        rng = random.Random(self.seed * 1_000_003 + self.ops)
        draw = rng.randrange(8)
        p = 0.0 if draw == 0 else 1.0 if draw == 1 else rng.random()
        for off, data in self.pending:
            for pos in range(0, len(data), BLOCK):
                if rng.random() < p:
                    os.pwrite(self.fd, data[pos:pos + BLOCK], off + pos)
                    self.kept += 1
                else:
                    self.dropped += 1
        os.fsync(self.fd)
        self.pending = []
        self.cache = {}
        self.cut = True

    def _write_through(self):
        for off, data in self.pending:
            os.pwrite(self.fd, data, off)
        os.fsync(self.fd)
        self.pending = []
        self.cache = {}

    def read(self, path, size, off, fh):
        with self.mutex:
            if path == "/stats":
                return self.stats()[off:off + size]
            if self.cut:
                raise FuseOSError(errno.EIO)
            size = max(0, min(size, self.size - off))
            data = bytearray(os.pread(self.fd, size, off).ljust(size, b"\0"))
            first, last = off // BLOCK, (off + size - 1) // BLOCK
            if self.cache and size:
                for b in range(first, last + 1):
                    block = self.cache.get(b)
                    if block is None:
                        continue
                    start = max(b * BLOCK, off)
                    end = min((b + 1) * BLOCK, off + size)
                    data[start - off:end - off] = block[start - b * BLOCK:end - b * BLOCK]
            return bytes(data)

    def write(self, path, data, off, fh):
        if path == "/cut":
            try:
                k, seed = data.decode().split()
                with self.mutex:
                    self.cut_at, self.seed = int(k), int(seed)
            except ValueError:
                raise FuseOSError(errno.EINVAL)
            return len(data)
        if path != "/disk":
            raise FuseOSError(errno.EACCES)
        if off % BLOCK or len(data) % BLOCK:
            # The loop device writes whole sectors with direct I/O.
            raise FuseOSError(errno.EINVAL)
        if off + len(data) > self.size:
            raise FuseOSError(errno.ENOSPC)
        with self.mutex:
            self._admit()
            self.writes += 1
            data = bytes(data)
            self.pending.append((off, data))
            for pos in range(0, len(data), BLOCK):
                self.cache[(off + pos) // BLOCK] = data[pos:pos + BLOCK]
        return len(data)

    def flush(self, path, fh):
        # close(2), not a durability point.
        return 0

    def fsync(self, path, datasync, fh):
        if path != "/disk":
            return 0
        with self.mutex:
            self.fsync_ops.append(self.ops)
            self._admit()
            self.fsyncs += 1
            self._write_through()
        return 0

    def release(self, path, fh):
        return 0

    def destroy(self, path):
        with self.mutex:
            if self.cut:
                return
            if self.cut_at < 0:
                self._write_through()
            else:
                self._cut_now()


def main():
    if len(sys.argv) != 5:
        sys.exit(__doc__)
    mnt, image = sys.argv[1], sys.argv[2]
    cut_at, seed = int(sys.argv[3]), int(sys.argv[4])
    FUSE(PowerCut(image, cut_at, seed), mnt, foreground=True, nothreads=True,
         direct_io=True, big_writes=True, max_write=1 << 20, max_read=1 << 20,
         allow_other=True)


if __name__ == "__main__":
    main()
