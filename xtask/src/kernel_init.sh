#!/bin/busybox sh
# PID 1 of the guest that `cargo xtask test-kernel` boots (see kernel.rs, which
# builds the initramfs around this script: busybox, the modules in
# /modules.order, this file as /init).
#
# Every virtio disk whose serial reads CASE.FS.PART.MODE (e.g. `k03.vfat.1.set`;
# PART 0 = no partition table) is a volume under test; FS is the driver (exfat
# or vfat); MODE `set` writes the file set, `fill` one file up to the last
# cluster. The phase comes from the kernel command line: `kt.phase=write`
# writes and reads back after a remount; `kt.phase=verify` (a fresh boot)
# reads back again.
#
# The guest only reports facts; the host judges them. One line each:
#   KT CASE DISK vdX                       the disk of the case
#   KT CASE STATFS STEP BSIZE BLOCKS FREE  statfs of the mounted volume
#   KT CASE DIGEST STEP SHA256 LINES       digest of the tree listing
#   KT CASE KLOG STEP LINE                 a kernel log line printed during STEP
#   KT CASE FAIL STEP DETAIL               an operation that failed
#   KT CASE INFO DETAIL                    a note (e.g. the file set was scaled)
#   KT CASE FILL BYTES APPENDS             size of the file that filled the volume
#   KT CASE TIME SECONDS                   guest time spent on the case
#   KT - KLOG boot LINE                    a boot-time kernel line about disks
#   KT BOOTED SECONDS                      /init started (guest uptime)
#   KT END PHASE                           all disks done
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
echo "KT BOOTED $(cut -d' ' -f1 /proc/uptime)"
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mount -t tmpfs tmpfs /tmp
mkdir -p /mnt
while read -r ko; do
    insmod "/lib/modules/$ko" || echo "KT - FAIL insmod $ko"
done < /modules.order

PHASE=
for word in $(cat /proc/cmdline); do
    case "$word" in kt.phase=*) PHASE=${word#kt.phase=} ;; kt.disks=*) NDISKS=${word#kt.disks=} ;; esac
done

# Wait until every disk the host attached has appeared.
tries=0
while [ "$(ls -d /sys/block/vd* 2>/dev/null | wc -l)" -lt "${NDISKS:-1}" ] && [ $tries -lt 100 ]; do
    usleep 100000
    tries=$((tries + 1))
done
usleep 200000 # let the partition scans finish logging
dmesg -c | grep -E 'vd[a-z]|GPT|[Pp]artition' | while IFS= read -r line; do
    echo "KT - KLOG boot $line"
done

# --- helpers (use ID, FS, DEV, MNT_OPTS of the current case) ----------------
fail() { echo "KT $ID FAIL $1 $2"; }

# Prints the kernel log of STEP, attributed to the current case, and clears it.
klog() {
    dmesg -c | while IFS= read -r line; do echo "KT $ID KLOG $1 $line"; done
}

# mnt STEP OPTIONS: mount the case's volume on /mnt.
mnt() {
    if mount -t "$FS" -o "$2,$MNT_OPTS" "$DEV" /mnt 2>/tmp/err; then
        klog "$1"
        return 0
    fi
    fail "$1" "mount -t $FS -o $2,$MNT_OPTS $DEV: $(tr '\n' ' ' </tmp/err)"
    klog "$1"
    return 1
}

umnt() {
    cd /
    umount /mnt 2>/tmp/err || fail "$1" "umount: $(tr '\n' ' ' </tmp/err)"
    klog "$1"
}

# statfs STEP: report cluster size, clusters and free clusters; sets CS, FREE.
statfs() {
    set -- "$1" $(stat -f -c '%S %b %f' /mnt)
    echo "KT $ID STATFS $1 $2 $3 $4"
    CS=$2
    FREE=$4
}

# listing: the tree under /mnt as /listing.sh prints it (kernel.rs's LISTING:
# the host lists a --rootdir source tree with the same commands).
listing() {
    (
        cd /mnt || exit
        . /listing.sh
    )
}

# digest STEP: report the digest of the listing (kept in /tmp/list.STEP).
digest() {
    listing >"/tmp/list.$1"
    echo "KT $ID DIGEST $1 $(sha256sum <"/tmp/list.$1" | cut -d' ' -f1) $(wc -l <"/tmp/list.$1")"
}

# --- the file set -----------------------------------------------------------
LONG255=$(printf '%0255d' 0 | tr 0 n)
UNICODE='Größe-日本語のファイル-Ελληνικά-Кириллица-😀-ñandú.txt'

# Writes the file set into the current directory, sized to FREE clusters of CS
# bytes: the 20 MiB file and the 300 files of many/ shrink on small volumes.
# A subshell, so that `set -e` ends it and not PID 1.
write_set() (
    budget=$((FREE * CS * 8 / 10 - 64 * CS - 4 * 1048576))
    big=20971520
    [ $big -gt $((budget / 2)) ] && big=$((budget / 2))
    [ $big -lt 0 ] && big=0
    budget=$((budget - big))
    many=$((budget / CS))
    [ $many -gt 300 ] && many=300
    [ $many -lt 0 ] && many=0
    if [ $big -lt 20971520 ] || [ $many -lt 300 ]; then
        echo "KT $ID INFO volume too small for the full set: big file $big B, $many files in many/"
    fi
    set -e
    : >empty.txt
    : >.hidden
    mkdir empty-dir
    printf 'hello\n' >small.txt
    for n in $((CS - 1)) $CS $((CS + 1)) $((3 * CS + 17)); do
        head -c $n /dev/urandom >"size-$n.bin"
    done
    head -c $big /dev/urandom >big.bin
    head -c $((3 * CS + 17)) /dev/urandom >shrunk.bin
    truncate -s $((CS + 1)) shrunk.bin
    printf 'start\n' >grown.bin
    truncate -s $((2 * CS + 5)) grown.bin
    printf 'first\n' >appended.txt
    head -c $((CS + 5)) /dev/urandom >>appended.txt
    mkdir -p a/b/c/d/e
    for d in a a/b a/b/c a/b/c/d a/b/c/d/e; do
        printf '%s\n' "$d" >"$d/name.txt"
        head -c $((CS / 2 + 3)) /dev/urandom >"$d/half.bin"
    done
    printf 'moved\n' >a/b/c/d/e/to-move.txt
    mv a/b/c/d/e/to-move.txt a/moved.txt
    printf 'renamed\n' >before.txt
    mv before.txt after.txt
    mkdir many
    i=1
    while [ $i -le $many ]; do
        printf '%d\n' $i >"many/entry number $i with a longer name.txt"
        i=$((i + 1))
    done
    printf 'long\n' >"$LONG255"
    printf 'unicode\n' >"$UNICODE"
    mkdir 'Ordner-ÄÖÜ-日本'
    printf 'x\n' >'Ordner-ÄÖÜ-日本/Datei-é.txt'
    printf 'case\n' >'Äpfel.txt'
)

# Writes one file until the volume is full. With clusters smaller than a
# page, a page-sized write fails whole when fewer clusters than a page are
# left: the bulk write stops short, and cluster-sized appends finish it.
fill_volume() {
    dd if=/dev/zero of=fill.bin bs=1048576 2>/tmp/err
    grep -q 'No space left' /tmp/err || fail fill "dd ended without ENOSPC: $(tr '\n' ' ' </tmp/err)"
    n=0
    while [ $n -lt 64 ] && dd if=/dev/zero of=fill.bin bs="$CS" count=1 oflag=append conv=notrunc 2>/dev/null; do
        n=$((n + 1))
    done
    sync
    echo "KT $ID FILL $(stat -c %s fill.bin) $n"
    echo "KT $ID INFO filled: 1 MiB writes, then $n cluster-sized appends"
}

# Writes the file set and checks the lookups.
write_and_look_up() {
    if ! write_set 2>/tmp/err; then
        fail write "$(tail -3 /tmp/err | tr '\n' ' ')"
    fi
    [ -f "$LONG255" ] || fail write "the 255-character name is missing"
    [ -f "$UNICODE" ] || fail write "the non-ASCII name is missing"
    [ "$(cat SMALL.TXT 2>/dev/null)" = hello ] || fail lookup "SMALL.TXT does not open small.txt"
    if [ "$FS" = exfat ]; then
        # exFAT compares names through the up-case table on the volume.
        [ "$(cat 'äpfel.txt' 2>/dev/null)" = case ] || fail lookup "äpfel.txt does not open Äpfel.txt"
    fi
}

# --- phases -----------------------------------------------------------------
phase_write() {
    if [ "$FS" = vfat ]; then
        # usefree: statfs reports the FSInfo free count instead of counting the FAT.
        if mnt mount-usefree ro,usefree; then
            statfs fsinfo
            umnt umount-usefree
        fi
    fi
    mnt mount-rw rw || return
    statfs fresh
    FRESH=$FREE
    digest fresh
    cd /mnt || return
    head -c $((5 * CS)) /dev/zero >five-clusters.tmp
    sync
    rm five-clusters.tmp
    sync
    statfs after-delete
    if [ "$MODE" = fill ]; then
        fill_volume
    else
        write_and_look_up
    fi
    klog write
    digest written
    # A full volume has no room for the copy.
    if [ "$MODE" != fill ]; then
        cp /tmp/list.written KT-LIST || fail write "cannot store KT-LIST"
    fi
    sync
    statfs after-write
    klog sync
    umnt umount-rw
    echo 3 >/proc/sys/vm/drop_caches
    mnt mount-ro ro || return
    statfs remount
    digest remount
    umnt umount-ro
}

phase_verify() {
    if [ "$FS" = vfat ]; then
        if mnt mount-usefree ro,usefree; then
            statfs fsinfo
            umnt umount-usefree
        fi
    fi
    mnt mount-ro ro || return
    statfs cold
    digest cold
    if [ "$MODE" = fill ]; then
        : # no copy on the volume: the host compares the digests
    elif [ -f /mnt/KT-LIST ]; then
        diff /mnt/KT-LIST /tmp/list.cold >/tmp/diff 2>&1 ||
            fail verify "differs from the written tree: $(grep '^[-+][^-+]' /tmp/diff | head -4 | tr '\n' ' ')"
    else
        fail verify "KT-LIST is missing"
    fi
    umnt umount-ro
}

# --- main -------------------------------------------------------------------
for sys in /sys/block/vd*; do
    serial=$(cat "$sys/serial" 2>/dev/null)
    ID=${serial%%.*}
    rest=${serial#*.}
    FS=${rest%%.*}
    rest=${rest#*.}
    PART=${rest%%.*}
    MODE=${rest#*.}
    [ -n "$ID" ] && [ "$ID" != "$serial" ] || continue
    disk=${sys##*/}
    DEV=/dev/$disk
    [ "$PART" = 0 ] || DEV=/dev/$disk$PART
    case "$FS" in
        exfat) MNT_OPTS=iocharset=utf8 ;;
        *) MNT_OPTS=utf8 ;;
    esac
    echo "KT $ID DISK $disk"
    start=$(cut -d' ' -f1 /proc/uptime)
    if [ ! -b "$DEV" ]; then
        fail device "$DEV is missing"
    elif [ "$PHASE" = write ]; then
        phase_write
    else
        phase_verify
    fi
    cd /
    end=$(cut -d' ' -f1 /proc/uptime)
    echo "KT $ID TIME $(awk "BEGIN { print $end - $start }")"
done
echo "KT END $PHASE"
sync
poweroff -f
