# SPDX-License-Identifier: GPL-2.0
# Sourced by guest-tests.sh: the per-mount sysfs directory (/sys/fs/<fstype>/<disk>/:
# sync_decompress, drop_caches, dir_ra_bytes) and directory readahead, against the C driver in
# this boot. $TESTW/img/bigdir.erofs (tests/run) holds d/, a directory of 100,000 empty files,
# and data, 4 MB of text in LZ4HC 64 KiB pclusters (2.4 MB compressed). Uses check/ok/notok, $M and $TESTW from
# guest-tests.sh; erofs_rs is loaded as fstype=erofs_rs.

img=$TESTW/img/bigdir.erofs
cdev=$(losetup -r -f --show "$img")
rdev=$(losetup -r -f --show "$img")
cn=${cdev#/dev/} rn=${rdev#/dev/}
CS=/sys/fs/erofs/$cn RS=/sys/fs/erofs_rs/$rn
mount -t erofs -o ro "$cdev" /mnt/c
if ! mount -t erofs_rs -o ro "$rdev" /mnt/rs; then
	notok "sysfs: erofs_rs mounts $img"
else
	check "sysfs: $RS has the files of $CS, with the same modes, and decomp_split (644)" sh -c "
		cd $CS && stat -c '%n %a' * >$M/sysfs.c; cd $RS && stat -c '%n %a' * >$M/sysfs.rs
		cat $M/sysfs.rs; grep -qx 'decomp_split 644' $M/sysfs.rs && grep -vx 'decomp_split 644' $M/sysfs.rs | diff $M/sysfs.c -"
	check "sysfs: the values read equal the C driver's (dir_ra_bytes 16384, sync_decompress 0)" sh -c "
		for f in dir_ra_bytes sync_decompress; do echo \$f \$(cat $CS/\$f) \$(cat $RS/\$f); done >$M/sv
		cat $M/sv; [ \"\$(cat $M/sv)\" = \"\$(printf 'dir_ra_bytes 16384 16384\nsync_decompress 0 0')\" ]"
	# Each write's errno (0: taken) and what the file reads afterwards, for every file and a
	# spread of valid and invalid inputs; the C driver's answers are the reference.
	sysfs_writes() {
		python3 - "$1" <<'EOF'
import errno, os, sys
d = sys.argv[1]
vals = ["0", "1", "2", "3", "4", "1\n", " 2", "0x2", "010", "+1", "-1", "abc", "1 2", "",
        "\n", "4294967295", "4294967296", "18446744073709551616", "65536", "0"]
for f in ("sync_decompress", "dir_ra_bytes", "drop_caches"):
    for v in vals:
        try:
            fd = os.open(os.path.join(d, f), os.O_WRONLY)
            try:
                os.write(fd, v.encode())
                e = 0
            finally:
                os.close(fd)
        except OSError as x:
            e = errno.errorcode.get(x.errno, x.errno)
        try:
            with open(os.path.join(d, f)) as r:
                now = r.read().strip()
        except OSError as x:
            now = errno.errorcode.get(x.errno, x.errno)
        print(f, repr(v), e, now)
EOF
	}
	sysfs_writes "$CS" >$M/sw.c 2>&1
	sysfs_writes "$RS" >$M/sw.rs 2>&1
	check "sysfs: writes of valid and invalid values: same errnos (EINVAL, ERANGE) and results as C" sh -c "
		diff $M/sw.c $M/sw.rs && grep -q \"sync_decompress '3' EINVAL\" $M/sw.rs && grep -q \"dir_ra_bytes '4294967296' ERANGE\" $M/sw.rs"
	echo 16384 >"$CS/dir_ra_bytes"; echo 16384 >"$RS/dir_ra_bytes"
	echo 0 >"$CS/sync_decompress"; echo 0 >"$RS/sync_decompress"
	# decomp_split (erofs_rs only): 0 auto, 1 force, 2 off, as sync_decompress takes its values;
	# the mount option of the same name, shown in /proc/mounts when not auto.
	check "sysfs: decomp_split reads 0 (auto), takes 0-2 (as /proc/mounts shows), EINVAL above" sh -c "
		[ \$(cat $RS/decomp_split) = 0 ] && echo 2 >$RS/decomp_split &&
		grep -q ' /mnt/rs .*,decomp_split=off' /proc/mounts && echo 1 >$RS/decomp_split &&
		grep -q ' /mnt/rs .*,decomp_split=force' /proc/mounts && ! (echo 3 >$RS/decomp_split) 2>/dev/null &&
		[ \$(cat $RS/decomp_split) = 1 ] && echo 0 >$RS/decomp_split && ! grep -q ' /mnt/rs .*decomp_split' /proc/mounts"
	check "sysfs: sync_decompress is the setting debugfs shows" sh -c "
		d=/sys/kernel/debug/erofs_rs/$rn/sync_decompress; [ ! -e \$d ] && exit 0
		echo 2 >$RS/sync_decompress && [ \$(cat \$d) = 2 ] && echo 1 >\$d && [ \$(cat $RS/sync_decompress) = 1 ] && echo 0 >$RS/sync_decompress"

	# The 100,000-entry directory: listing (names, d_ino, order) as the C driver's, with
	# readahead and without.
	check "readdir: ls -f -i of the 100,000-entry directory equals the C driver's" sh -c "
		ls -f -i /mnt/c/d >$M/ld.c && ls -f -i /mnt/rs/d >$M/ld.rs && [ \$(wc -l <$M/ld.rs) = 100002 ] && diff $M/ld.c $M/ld.rs"
	# Read requests a cold listing sends to the loop device (/sys/block/*/stat: reads
	# completed), with dir_ra_bytes at its default and 0, for both drivers.
	ra_reads() { # sysfs-dir mountpoint dev ra
		echo "$4" >"$1/dir_ra_bytes"
		sync; echo 3 >/proc/sys/vm/drop_caches
		a=$(awk '{print $1}' "/sys/block/$3/stat")
		ls -f "$2/d" >/dev/null
		b=$(awk '{print $1}' "/sys/block/$3/stat")
		echo $((b - a))
	}
	c16=$(ra_reads "$CS" /mnt/c "$cn" 16384) c0=$(ra_reads "$CS" /mnt/c "$cn" 0)
	r16=$(ra_reads "$RS" /mnt/rs "$rn" 16384) r0=$(ra_reads "$RS" /mnt/rs "$rn" 0)
	r64=$(ra_reads "$RS" /mnt/rs "$rn" 65536)
	echo "# cold ls -f of 100,000 entries, device reads: C $c16 (dir_ra_bytes=16384) $c0 (0); erofs_rs $r16 (16384) $r0 (0) $r64 (65536)"
	check "readdir: dir_ra_bytes=0 turns readahead off (erofs_rs: $r0 reads against $r16, C: $c0 against $c16)" \
		sh -c "[ $r0 -ge $((r16 * 2)) ] && [ $r64 -lt $r16 ] && [ $c0 -ge $((c16 * 2)) ]"
	check "readdir: as many device reads as the C driver, within 10% ($r16 and $c16, $r0 and $c0)" \
		sh -c "[ $((r16 * 10)) -le $((c16 * 11)) ] && [ $((r0 * 10)) -le $((c0 * 11)) ] && [ $((r0 * 10)) -ge $((c0 * 9)) ]"
	echo 16384 >"$CS/dir_ra_bytes"; echo 16384 >"$RS/dir_ra_bytes"

	# drop_caches: the compressed data the managed cache keeps (cache_strategy=readaround: the
	# pclusters a read does not decode to their end, as the C driver) stays cached after the
	# file's own page cache is dropped, so a second read costs fewer device reads, until
	# drop_caches drops it.
	reread() { # mountpoint dev
		python3 -c 'import os,sys
fd = os.open(sys.argv[1], os.O_RDONLY); os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED); os.close(fd)' "$1/data"
		a=$(awk '{print $3}' "/sys/block/$2/stat")
		cat "$1/data" >/dev/null
		b=$(awk '{print $3}' "/sys/block/$2/stat")
		echo $((b - a))
	}
	dc() { # sysfs-dir mountpoint dev value
		sync; echo 3 >/proc/sys/vm/drop_caches
		cat "$2/data" >/dev/null
		kept=$(reread "$2" "$3")
		echo "$4" >"$1/drop_caches"
		dropped=$(reread "$2" "$3")
		echo "$kept $dropped"
	}
	read -r ck1 cd1 <<EOF
$(dc "$CS" /mnt/c "$cn" 1)
EOF
	read -r rk1 rd1 <<EOF
$(dc "$RS" /mnt/rs "$rn" 1)
EOF
	read -r rk3 rd3 <<EOF
$(dc "$RS" /mnt/rs "$rn" 3)
EOF
	echo "# re-read of data, sectors read: C $ck1 kept, $cd1 after drop_caches=1; erofs_rs $rk1 kept, $rd1 after 1, $rk3 kept, $rd3 after 3"
	# (The C driver keeps part of the data in its managed cache, and drops it too.)
	check "drop_caches: 1 and 3 drop the cached compressed data (erofs_rs: $rk1 then $rd1 sectors, C: $ck1 then $cd1)" \
		sh -c "[ $rd1 -gt $((rk1 + 1024)) ] && [ $rd3 -gt $((rk3 + 1024)) ] && [ $cd1 -gt $((ck1 + 1024)) ]"
	check "data reads equal the C driver's" cmp /mnt/c/data /mnt/rs/data
	umount /mnt/rs
	check "sysfs: $RS is removed at unmount" sh -c "[ ! -e $RS ] && [ -d /sys/fs/erofs_rs/features ]"
fi
umount /mnt/c
losetup -d "$cdev"; losetup -d "$rdev"
# A file-backed mount's directory is named major:minor, as the C driver's.
if mount -t erofs_rs -o ro "$img" /mnt/rs; then
	mm=$(mountpoint -d /mnt/rs)
	check "sysfs: a file-backed mount's directory is /sys/fs/erofs_rs/$mm" sh -c "[ -f /sys/fs/erofs_rs/$mm/dir_ra_bytes ] && ls -f /mnt/rs/d | wc -l | grep -qx 100002"
	umount /mnt/rs
	check "sysfs: /sys/fs/erofs_rs/$mm is removed at unmount" sh -c "[ ! -e /sys/fs/erofs_rs/$mm ]"
else
	notok "sysfs: erofs_rs mounts $img file-backed"
fi
