#!/usr/bin/env python3
"""A source tree that changes under a format (fusepy), for mkfs-alloc's
--rootdir race test.

The tree: /a.txt and /dir/f.txt, both PUBLIC. The first time the file named
by TRIGGER is opened and closed again (the walk checks that it can be read),
the entry named by SWAP becomes a symbolic link to TARGET (a path outside
the tree holding a secret of the same length). Whoever opens SWAP's path
after that goes through the link and reads the secret. (The swap waits for
the close: a stat of the walk's open file is a lookup by path here, and it
must still see the file.)

Usage: racetree.py MOUNTPOINT TRIGGER SWAP TARGET
"""

import errno
import stat
import sys
import time

from fuse import FUSE, FuseOSError, Operations

PUBLIC = b"public-inside-the-tree-abcdefghijk"


class RaceTree(Operations):
    def __init__(self, trigger, swap, target):
        self.trigger = trigger
        self.swap = swap
        self.target = target
        self.swapped = False
        self.now = time.time()

    def _dir(self):
        return dict(st_mode=stat.S_IFDIR | 0o755, st_nlink=2,
                    st_ctime=self.now, st_mtime=self.now, st_atime=self.now)

    def _file(self):
        return dict(st_mode=stat.S_IFREG | 0o644, st_nlink=1, st_size=len(PUBLIC),
                    st_ctime=self.now, st_mtime=self.now, st_atime=self.now)

    def _link(self):
        return dict(st_mode=stat.S_IFLNK | 0o777, st_nlink=1, st_size=len(self.target),
                    st_ctime=self.now, st_mtime=self.now, st_atime=self.now)

    def getattr(self, path, fh=None):
        if self.swapped and path == self.swap:
            return self._link()
        if path in ("/", "/dir"):
            return self._dir()
        if path in ("/a.txt", "/dir/f.txt"):
            return self._file()
        raise FuseOSError(errno.ENOENT)

    def readdir(self, path, fh):
        if path == "/":
            return [".", "..", "a.txt", "dir"]
        if path == "/dir" and not (self.swapped and self.swap == "/dir"):
            return [".", "..", "f.txt"]
        raise FuseOSError(errno.ENOTDIR)

    def readlink(self, path):
        if self.swapped and path == self.swap:
            return self.target
        raise FuseOSError(errno.EINVAL)

    def open(self, path, flags):
        if path not in ("/a.txt", "/dir/f.txt"):
            raise FuseOSError(errno.ENOENT)
        return 1

    def release(self, path, fh):
        if path == self.trigger:
            self.swapped = True
        return 0

    def read(self, path, size, offset, fh):
        return PUBLIC[offset:offset + size]


if __name__ == "__main__":
    mnt, trigger, swap, target = sys.argv[1:5]
    FUSE(RaceTree(trigger, swap, target), mnt, foreground=True,
         entry_timeout=0, attr_timeout=0, negative_timeout=0)
