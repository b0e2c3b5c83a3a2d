# SPDX-License-Identifier: GPL-2.0
# cache_strategy= (disabled, readahead, readaround): on an LZ4, an LZMA and a Zstandard image,
# each value reads every file as the source and the C driver have it, leaves no more in the page
# cache than the C driver with the same value (+2%, and a little metadata), and readers of one
# file racing over the same pclusters all read it right; pclusters that need no I/O are decoded
# at once; a pcluster two reads want at once is decoded once, for both. Sourced by guest-tests.sh
# after
# ztests.sh (uses its check/ok/notok, $M, $TESTW, $TREE_TOOL, dmark).

# cached: Buffers + Cached of /proc/meminfo, in KiB.
cached() { awk '/^(Buffers|Cached):/ { s += $2 } END { print s }' /proc/meminfo; }
# cgrowth DIR: what a cold read of DIR/big/text6m leaves in the page cache, in KiB.
cgrowth() {
	sync; echo 3 >/proc/sys/vm/drop_caches
	a=$(cached); cat "$1/big/text6m" >/dev/null; b=$(cached)
	echo $((b - a))
}
section "cache_strategy"
(cd "$TESTW/trees/zedge" && find . -type f | sort | xargs -d "\n" md5sum) >$M/cs.src
S6=$(md5sum <"$TESTW/trees/zedge/big/text6m")
S6H=$(tail -c +3000001 "$TESTW/trees/zedge/big/text6m" | md5sum)
for v in lz4hc64k lzma8m zstd; do
	img=$(awk -v v=$v '$1 == "zedge" && $2 == v { print $3 }' "$TESTW/list")
	if [ -z "$img" ]; then notok "zedge/$v: listed for the cache_strategy checks"; continue; fi
	L1=$(losetup -r -f --show "$img"); L2=$(losetup -r -f --show "$img")
	# The same readahead for both drivers, the default (128 KiB): a loop device keeps the
	# readahead an earlier test gave it after it is detached (ztests.sh sets 0 and 4 MiB), and
	# a larger window leaves fewer pclusters across batch boundaries to keep.
	blockdev --setra 256 "$L1"; blockdev --setra 256 "$L2"
	# (On the debug kernel, one value per image, and no C driver or page-cache comparison: the
	# normal kernel runs the whole matrix; the debug one looks for races and lifetimes.)
	css="disabled readahead readaround"
	if [ "$SUITE" = debug ]; then
		case $v in lz4hc64k) css=disabled ;; lzma8m) css=readahead ;; *) css=readaround ;; esac
	fi
	for cs in $css; do
		t="zedge/$v cache_strategy=$cs"
		if ! mount -t erofs -o ro,cache_strategy=$cs "$L1" /mnt/c; then
			notok "$t: the C driver mounts"; continue
		fi
		r=$("$TREE_TOOL" mount erofs_rs "$L2" /mnt/rs cache_strategy=$cs)
		if [ "$r" != OK ]; then
			notok "$t: mounts ($r)"; umount /mnt/c; continue
		fi
		dmark
		sync; echo 3 >/proc/sys/vm/drop_caches
		(cd /mnt/rs && find . -type f | sort | xargs -d "\n" md5sum) >$M/cs.rs 2>&1
		if [ "$cs" = disabled ]; then
			# Nothing is kept: pclusters are read in place into the pages they decode to
			# where C's rules allow it (in-place I/O), the rest into short-lived pages.
			# shellcheck disable=SC2046
			set -- $(awk '$1 == "pages" { print $3, $5, $7 }' "$ZS/${L2#/dev/}/decompress_latency")
			check "$t: compressed data is read in place (pages inplace ${1:-none}, shortlived ${2:-none})" \
				test "${1:-0}" -gt 0
			# LZ4 decodes most pclusters over their input, as C (the margin rule).
			[ $v != lz4hc64k ] || check "$t: LZ4 pclusters are decoded in place (${3:-none})" \
				test "${3:-0}" -gt 0
			# MicroLZMA reads those pages where they are, not from a copy.
			# shellcheck disable=SC2046
			set -- $(awk '$1 == "pages" { print $9 }' "$ZS/${L2#/dev/}/decompress_latency")
			[ $v != lzma8m ] || check "$t: stream pclusters are decoded from the pages read in place (${1:-none})" \
				test "${1:-0}" -gt 0
		fi
		if [ "$SUITE" = debug ]; then
			check "$t: every file equals the source tree" diff $M/cs.src $M/cs.rs
		else
			(cd /mnt/c && find . -type f | sort | xargs -d "\n" md5sum) >$M/cs.c 2>&1
			check "$t: every file equals the source tree and the C driver's" \
				sh -c "diff $M/cs.src $M/cs.rs && diff $M/cs.c $M/cs.rs"
			gc=$(cgrowth /mnt/c); gr=$(cgrowth /mnt/rs)
			check "$t: a cold read leaves at most the C driver's page cache +2% (C $gc KiB, erofs_rs $gr KiB)" \
				test "$gr" -le $((gc + gc / 50 + 256))
		fi
		# Readers racing over the same pclusters, in different block sizes, some from the
		# middle of the file.
		sync; echo 3 >/proc/sys/vm/drop_caches
		for bs in 4096 16384 1048576 12345; do
			dd if=/mnt/rs/big/text6m bs=$bs 2>/dev/null | md5sum >$M/cc.$bs &
			tail -c +3000001 /mnt/rs/big/text6m | md5sum >$M/cc.h$bs &
		done
		wait
		check "$t: 8 concurrent readers of one file all read it right, no error logged" sh -c "
			for bs in 4096 16384 1048576 12345; do
				[ \"\$(cat $M/cc.\$bs)\" = '$S6' ] && [ \"\$(cat $M/cc.h\$bs)\" = '$S6H' ] || exit 1
			done
			! dmesg | tail -n +$DMARK | grep -q 'erofs_rs (device'"
		umount /mnt/rs; umount /mnt/c
	done
	losetup -d "$L1"; losetup -d "$L2"
done

section "stream decoders over pages read in place"
# A MicroLZMA or DEFLATE (64 KiB and up) pcluster read in place is decoded from the file's pages
# it was read into, and its output overwrites them as it goes (C: z_erofs_stream_switch_bufs):
# the bytes the output reaches (or nearly) before the decoder has read them are copied aside
# first. Data that is zeros then random bytes makes the output catch up with its input at the
# end of many pclusters. Zstandard pclusters are copied whole, which lets zstd decode in one
# pass. Read with cache_strategy=disabled (nothing kept, so every pcluster it can is read in
# place), each image equals the source and the C driver's reading of it.
mkdir -p /run/tmp/sip/t
for i in $(seq 86); do head -c 16384 /dev/zero; head -c 32768 /dev/urandom; done >/run/tmp/sip/t/semi
SS=$(md5sum </run/tmp/sip/t/semi)
copied=0
for z in "lzma -C65536" "deflate -C65536" "deflate -C16384" "zstd -C65536"; do
	t="stream in place (-z$z)"
	# shellcheck disable=SC2086
	if ! mkfs.erofs -d0 -z$z /run/tmp/sip/img /run/tmp/sip/t >/dev/null 2>&1; then
		notok "$t: mkfs.erofs"; continue
	fi
	L1=$(losetup -r -f --show /run/tmp/sip/img); L2=$(losetup -r -f --show /run/tmp/sip/img)
	r=$("$TREE_TOOL" mount erofs_rs "$L2" /mnt/rs cache_strategy=disabled)
	if [ "$r" != OK ]; then
		notok "$t: mounts ($r)"; losetup -d "$L1"; losetup -d "$L2"; continue
	fi
	dmark
	sync; echo 3 >/proc/sys/vm/drop_caches
	got=$(md5sum </mnt/rs/semi)
	if [ "$SUITE" = debug ]; then
		check "$t: the file equals the source, no error logged" sh -c "
			[ '$got' = '$SS' ] && ! dmesg | tail -n +$DMARK | grep -q 'erofs_rs (device'"
	else
		mount -t erofs -o ro "$L1" /mnt/c && gc=$(md5sum </mnt/c/semi) && umount /mnt/c
		check "$t: the file equals the source and the C driver's, no error logged" sh -c "
			[ '$got' = '$SS' ] && [ '${gc:-}' = '$SS' ] && ! dmesg | tail -n +$DMARK | grep -q 'erofs_rs (device'"
	fi
	# shellcheck disable=SC2046
	set -- $(awk '$1 == "pages" { print $9, $11 }' "$ZS/${L2#/dev/}/decompress_latency")
	case $z in
	lzma* | "deflate -C65536")
		check "$t: pclusters decoded from the pages read in place (${1:-none}, ${2:-none} bytes copied aside)" \
			test "${1:-0}" -gt 0 ;;
	*)
		check "$t: pclusters copied whole, as they decode faster so (${1:-none} decoded in place)" \
			test "${1:-1}" -eq 0 ;;
	esac
	copied=$((copied + ${2:-0}))
	umount /mnt/rs; losetup -d "$L1"; losetup -d "$L2"
done
check "stream in place: the output caught up with its input and copied it aside first ($copied bytes)" \
	test "$copied" -gt 0
rm -rf /run/tmp/sip

section "managed cache"
# The managed cache is the driver's own page cache (C: an inode of the superblock's, `sbi->
# managed_cache`), not the block device's: a writer of the device (allowed on a read-write loop
# device, CONFIG_BLK_DEV_WRITE_MOUNTED) does not change a pcluster cached there. A read of one
# page in the middle of a 64 KiB pcluster keeps it (cache_strategy=readaround); the device's
# first block of it is overwritten through the device's page cache; the file's own page cache is
# dropped; the same page read again, decoded from the managed cache, must be the same.
ZPEEK=$(dirname "$0")/zpeek.py
img=$(awk '$1 == "zedge" && $2 == "lz4hc64k" { print $3 }' "$TESTW/list")
for drv in erofs_rs erofs; do
	t="managed cache ($drv)"
	cp "$img" /run/tmp/zc.erofs && L=$(losetup -f --show /run/tmp/zc.erofs) || { notok "$t: rw loop device"; continue; }
	if ! mount -t $drv -o ro,cache_strategy=readaround "$L" /mnt/rs; then
		notok "$t: mounts"; losetup -d "$L"; continue
	fi
	off=$((2 * 1048576 + 20480))
	want=$(tail -c +$((off + 1)) "$TESTW/trees/zedge/big/text6m" | head -c 4096 | md5sum | cut -d' ' -f1)
	# shellcheck disable=SC2046
	set -- $(python3 "$ZPEEK" /mnt/rs/big/text6m $off)
	got=${1:-none} pa=${2:-0} la=${3:-0} ll=${4:-0}
	if ! [ "$got" = "$want" ] || ! [ "$la" -lt $off ] || ! [ $((la + ll)) -gt $((off + 4096)) ] || [ "$pa" = 0 ]; then
		notok "$t: a page in the middle of a pcluster reads right ($got at $la+$ll, device byte $pa)"
		umount /mnt/rs; losetup -d "$L"; rm -f /run/tmp/zc.erofs; continue
	fi
	ok "$t: a page in the middle of a pcluster (extent $la+$ll, device byte $pa) reads right"
	head -c 4096 /dev/urandom >$M/zc.junk
	dd if=$M/zc.junk of="$L" bs=4096 seek=$((pa / 4096)) count=1 conv=notrunc status=none
	check "$t: the device's page cache now holds other bytes there" \
		sh -c "dd if=$L bs=4096 skip=$((pa / 4096)) count=1 status=none | cmp -s - $M/zc.junk"
	python3 "$ZPEEK" --drop /mnt/rs/big/text6m
	again=$(python3 "$ZPEEK" /mnt/rs/big/text6m $off | cut -d' ' -f1)
	check "$t: read again after the device was written, from the managed cache, it is the same" \
		test "$again" = "$want"
	umount /mnt/rs; losetup -d "$L"; rm -f /run/tmp/zc.erofs
done

section "in-place I/O on a failing device"
# A pcluster in the middle of a file sits on sectors that fail (a device-mapper table with an
# `error` target there): with nothing kept (cache_strategy=disabled) most pclusters are read
# into the file's own pages. The read of that file fails with EIO on both drivers, again when
# read again (no page left locked), everything else reads right, and the mount comes off.
img=$(awk '$1 == "zedge" && $2 == "lz4hc64k" { print $3 }' "$TESTW/list")
L=$(losetup -r -f --show "$img")
pa=0
if mount -t erofs_rs -o ro "$L" /mnt/rs; then
	# shellcheck disable=SC2046
	set -- $(python3 "$ZPEEK" /mnt/rs/big/text6m $((3 * 1048576)))
	pa=${2:-0}
	umount /mnt/rs
fi
sz=$(blockdev --getsz "$L")
s=$((pa / 512)) n=128
if [ "$pa" -gt 0 ] && [ $((s + n)) -lt "$sz" ] && printf '%s\n' "0 $s linear $L 0" "$s $n error" \
	"$((s + n)) $((sz - s - n)) linear $L $((s + n))" | DM_DISABLE_UDEV=1 dmsetup create --readonly erofs-ipfail; then
	(cd "$TESTW/trees/zedge" && find . -type f ! -path ./big/text6m | sort | xargs -d "\n" md5sum) >$M/ipf.src
	head -c 2097152 "$TESTW/trees/zedge/big/text6m" | md5sum >$M/ipf.head
	# (No udev in the guest: the device's node by its kernel name.)
	D=/dev/$(dmsetup info -c --noheadings -o blkdevname erofs-ipfail)
	for drv in erofs_rs erofs; do
		t="in-place I/O, failing sectors at device byte $pa ($drv)"
		if ! mount -t $drv -o ro,cache_strategy=disabled "$D" /mnt/rs; then
			notok "$t: mounts"; continue
		fi
		sync; echo 3 >/proc/sys/vm/drop_caches
		check "$t: reading the file fails with EIO" sh -c \
			"! cat /mnt/rs/big/text6m 2>$M/ipf.err >/dev/null && grep -q 'Input/output error' $M/ipf.err"
		check "$t: and again, with the page cache it left" sh -c \
			"! cat /mnt/rs/big/text6m 2>$M/ipf.err >/dev/null && grep -q 'Input/output error' $M/ipf.err"
		check "$t: its first 2 MiB read right" sh -c \
			"head -c 2097152 /mnt/rs/big/text6m | md5sum | cmp -s - $M/ipf.head"
		(cd /mnt/rs && find . -type f ! -path ./big/text6m | sort | xargs -d "\n" md5sum) >$M/ipf.rs 2>&1
		check "$t: every other file equals the source tree" diff $M/ipf.src $M/ipf.rs
		check "$t: unmounts" umount /mnt/rs
	done
	DM_DISABLE_UDEV=1 dmsetup remove erofs-ipfail
else
	notok "in-place I/O on a failing device: a device-mapper table around the pcluster at byte $pa"
fi
losetup -d "$L"

section "pclusters that need no I/O"
# As the C driver's bypass queue (`z_erofs_runqueue`): the pclusters of a read whose data is at
# hand (inline, ztailpacking, and fragment data; pclusters the managed cache holds; holes) are
# decoded by the reader right after the read's bios are submitted, and the folios one of them
# covers whole are unlocked then, not after the I/O and a worker. decompress_latency counts them
# (`bypass N folios N`).
# Every file must still read as the source tree and the C driver have it.
for v in lz4ztail lz4frag lz4hc64k; do
	img=$(awk -v v=$v '$1 == "zedge" && $2 == v { print $3 }' "$TESTW/list")
	if [ -z "$img" ]; then notok "zedge/$v: listed for the bypass checks"; continue; fi
	t="zedge/$v: data at hand"
	L1=$(losetup -r -f --show "$img"); L2=$(losetup -r -f --show "$img")
	blockdev --setra 256 "$L1"; blockdev --setra 256 "$L2"
	r=$("$TREE_TOOL" mount erofs_rs "$L2" /mnt/rs cache_strategy=readaround)
	if [ "$r" != OK ]; then
		notok "$t: mounts ($r)"; losetup -d "$L1"; losetup -d "$L2"; continue
	fi
	dmark
	sync; echo 3 >/proc/sys/vm/drop_caches
	if [ $v = lz4hc64k ]; then
		# No inline data here: pages read in the middle of a file leave the pclusters they
		# start and end in kept (readaround), which the whole read that follows finds cached.
		t="zedge/$v: pclusters the managed cache holds"
		dd if=/mnt/rs/big/text6m of=/dev/null bs=4096 skip=300 count=20 status=none
		dd if=/mnt/rs/big/text6m of=/dev/null bs=4096 skip=900 count=20 status=none
		echo 1 >"$ZS/${L2#/dev/}/reset"
	fi
	(cd /mnt/rs && find . -type f | sort | xargs -d "\n" md5sum) >$M/bp.rs 2>&1
	# shellcheck disable=SC2046
	set -- $(awk '$1 == "bypass" { print $2, $4 }' "$ZS/${L2#/dev/}/decompress_latency")
	check "$t: decoded by the reader before its read's I/O completed (${1:-none} pclusters)" \
		test "${1:-0}" -gt 0
	# A cached pcluster at the start of a batch covers folios of its own, unlocked at once.
	[ $v != lz4hc64k ] || check "$t: its folios unlocked then (${2:-none})" test "${2:-0}" -gt 0
	if [ "$SUITE" = debug ]; then
		check "$t: every file equals the source tree, no error logged" sh -c "
			diff $M/cs.src $M/bp.rs && ! dmesg | tail -n +$DMARK | grep -q 'erofs_rs (device'"
	else
		mount -t erofs -o ro "$L1" /mnt/c
		(cd /mnt/c && find . -type f | sort | xargs -d "\n" md5sum) >$M/bp.c 2>&1
		umount /mnt/c
		check "$t: every file equals the source tree and the C driver's, no error logged" sh -c "
			diff $M/cs.src $M/bp.rs && diff $M/bp.c $M/bp.rs &&
			! dmesg | tail -n +$DMARK | grep -q 'erofs_rs (device'"
	fi
	umount /mnt/rs; losetup -d "$L1"; losetup -d "$L2"
done

section "a pcluster two reads want at once"
# As the C driver (`z_erofs_pcluster_begin` finding a pcluster another read has claimed,
# `Z_EROFS_PCLUSTER_INFLIGHT`): when a read wants a pcluster (kept by the managed cache) that
# another read of the file is reading, it hands that read its folios' parts of it, and the
# pcluster is read and decoded once, into both reads' folios; a folio that also holds bytes of
# another pcluster ends when both its parts have. decompress_latency counts them (`shared N
# folios N`). tests/qemu/tworeads.py makes pairs of cold reads that want one pcluster, on a
# dm-delay device whose reads take 100 ms (400 ms on the debug kernel, where 100 ms was not enough
# for the readahead's pair), so that the second read comes while the first one's are in flight:
# a readahead, then page faults 4.25 MiB further into a 5-8 MiB LZMA extent
# (tests/run's shr image); and two threads reading 64-384 KiB apart in the 1 MiB-256 KiB
# pclusters of a text (each decoder's path). Every read equals the source, and so does the file
# read whole after, by erofs_rs and by the C driver.
# tworeads FILE SOURCE MODE IMAGE NAME: the checks of one image.
tworeads() {
	L1=$(losetup -r -f --show "$4")
	delay=100
	[ "$SUITE" != debug ] || delay=400
	if ! echo "0 $(blockdev --getsz "$L1") delay $L1 0 $delay" |
		DM_DISABLE_UDEV=1 dmsetup create --readonly erofs-delay; then
		notok "$5: dm-delay"; losetup -d "$L1"; return
	fi
	D=/dev/$(dmsetup info -c --noheadings -o blkdevname erofs-delay)
	r=$("$TREE_TOOL" mount erofs_rs "$D" /mnt/rs cache_strategy=readaround)
	if [ "$r" = OK ]; then
		dmark
		lat=$ZS/${D#/dev/}/decompress_latency
		# shellcheck disable=SC2046
		set -- "$@" $(python3 "$(dirname "$0")/tworeads.py" "$1" "$2" 16 "$3" "$lat" 2>&1)
		# shellcheck disable=SC2046
		set -- "$@" $(awk '$1 == "shared" { print $2, $4 }' "$lat")
		check "$5: ${6:-no} reads equal the source (${7:-none} differ)" test "${7:-1}" = 0
		check "$5: pclusters decoded by the other read (${8:-none}, parts of ${9:-none} folios)" \
			test "${8:-0}" -gt 0 -a "${9:-0}" -gt 0
		sync; echo 3 >/proc/sys/vm/drop_caches
		got=$(md5sum <"$1") st=$(md5sum <"$2")
		umount /mnt/rs
		if [ "$SUITE" = debug ]; then
			check "$5: the whole file equals the source, no error logged" sh -c "
				[ '$got' = '$st' ] && ! dmesg | tail -n +$DMARK | grep -q 'erofs_rs (device'"
		else
			# (Another loop device: dm-delay holds the first.)
			L3=$(losetup -r -f --show "$4")
			mount -t erofs -o ro "$L3" /mnt/c
			gc=$(md5sum <"/mnt/c/${1#/mnt/rs/}")
			umount /mnt/c; losetup -d "$L3"
			check "$5: the whole file equals the source and the C driver's, no error logged" sh -c "
				[ '$got' = '$st' ] && [ '$gc' = '$st' ] &&
				! dmesg | tail -n +$DMARK | grep -q 'erofs_rs (device'"
		fi
	else
		notok "$5: mounts ($r)"
	fi
	DM_DISABLE_UDEV=1 dmsetup remove erofs-delay
	losetup -d "$L1"
}
if [ -f "$TESTW/img/shr-lzma1m.erofs" ]; then
	tworeads /mnt/rs/rep "$TESTW/trees/shr/rep" ahead "$TESTW/img/shr-lzma1m.erofs" \
		"readahead and a read 4 MiB on (lzma -C1048576)"
else
	notok "shr-lzma1m: built by tests/run"
fi
mkdir -p /run/tmp/shr/t
cp "$TESTW/trees/zedge/big/text6m" /run/tmp/shr/t/text
zs="lz4hc:-C1048576 lzma:-C262144 deflate:-C65536 zstd:-C262144"
[ "$SUITE" != debug ] || zs="lz4hc:-C1048576 zstd:-C262144"
for z in $zs; do
	t="two threads (-z${z%%:*} ${z#*:})"
	if mkfs.erofs -d0 -z"${z%%:*}" "${z#*:}" /run/tmp/shr/img /run/tmp/shr/t >/dev/null 2>&1; then
		tworeads /mnt/rs/text /run/tmp/shr/t/text threads /run/tmp/shr/img "$t"
	else
		notok "$t: mkfs.erofs"
	fi
done
# A sequential reader's next readahead batch does not hand the batch before it the pcluster they
# both want: it reads it itself. (Handing it over, the second batch's backend waited behind the
# first's on the same CPU: 1-2% of a cold LZ4 read with per-CPU kthreads. Through a 20 ms
# dm-delay, a cold read of this 6 MB text in 64 KiB LZ4 pclusters handed over 12-16.)
if mkfs.erofs -d0 -zlz4 -C65536 /run/tmp/shr/img /run/tmp/shr/t >/dev/null 2>&1; then
	L1=$(losetup -r -f --show /run/tmp/shr/img)
	echo "0 $(blockdev --getsz "$L1") delay $L1 0 20" |
		DM_DISABLE_UDEV=1 dmsetup create --readonly erofs-delay
	D=/dev/$(dmsetup info -c --noheadings -o blkdevname erofs-delay)
	for o in "" ,decomp_pcpu_kthreads; do
		t="a sequential read (-zlz4 -C65536${o:+, ${o#,}})"
		r=$("$TREE_TOOL" mount erofs_rs "$D" /mnt/rs "cache_strategy=readaround$o")
		if [ "$r" = OK ]; then
			dmark
			sync; echo 3 >/proc/sys/vm/drop_caches
			got=$(md5sum </mnt/rs/text) st=$(md5sum </run/tmp/shr/t/text)
			n=$(awk '$1 == "shared" { print $2 }' "$ZS/${D#/dev/}/decompress_latency")
			umount /mnt/rs
			check "$t: equals the source, no error logged" sh -c "
				[ '$got' = '$st' ] && ! dmesg | tail -n +$DMARK | grep -q 'erofs_rs (device'"
			check "$t: no pcluster handed to the batch before (${n:-none})" test "${n:-1}" = 0
		else
			notok "$t: mounts ($r)"
		fi
	done
	DM_DISABLE_UDEV=1 dmsetup remove erofs-delay
	losetup -d "$L1"
else
	notok "a sequential read: mkfs.erofs"
fi
# The index page a sequential reader's next readahead batch will need is read ahead with the
# batch before it (erofs_rs's own: the C driver reads it when that batch starts, synchronously,
# and the reader waits). A cold read of 30 MB in 64 KiB LZ4 pclusters, with 8 MiB of readahead,
# counts each driver's synchronous 4 KiB reads (block_rq_issue, rwbs R): both read the
# superblock and the inode's first index page so; C 5 in all, erofs_rs 5 before, 2 now.
mkdir -p /run/tmp/shr/big
for i in 1 2 3 4 5; do cat "$TESTW/trees/zedge/big/text6m"; done >/run/tmp/shr/big/text
if mkfs.erofs -d0 -zlz4 -C65536 /run/tmp/shr/bigimg /run/tmp/shr/big >/dev/null 2>&1; then
	L1=$(losetup -r -f --show /run/tmp/shr/bigimg)
	blockdev --setra 16384 "$L1"
	majmin=$(stat -c '%t %T' "$L1")
	majmin="$((0x${majmin% *})),$((0x${majmin#* }))"
	T=/sys/kernel/tracing
	mountpoint -q $T || mount -t tracefs none $T
	st=$(md5sum </run/tmp/shr/big/text)
	for fs in erofs erofs_rs; do
		if [ $fs = erofs ]; then
			mount -t erofs -o ro "$L1" /mnt/c; mnt=/mnt/c
		else
			"$TREE_TOOL" mount erofs_rs "$L1" /mnt/rs >/dev/null; mnt=/mnt/rs
		fi
		# (After the mount, whose own dmesg line names the device: the erofs_rs one is last.)
		dmark
		sync; echo 3 >/proc/sys/vm/drop_caches
		echo >$T/trace
		echo 1 >$T/events/block/block_rq_issue/enable
		got=$(md5sum <$mnt/text)
		echo 0 >$T/events/block/block_rq_issue/enable
		n=$(awk -v d="$majmin" '$0 ~ "block_rq_issue: " d " R 4096 " { n++ } END { print n + 0 }' $T/trace)
		umount $mnt
		eval "sync_$fs=\$n got_$fs=\"\$got\""
	done
	echo >$T/trace
	check "a 30 MB sequential read: both drivers' bytes equal the source, no error logged" sh -c "
		[ '$got_erofs' = '$st' ] && [ '$got_erofs_rs' = '$st' ] &&
		! dmesg | tail -n +$DMARK | grep -q 'erofs_rs (device'"
	check "a 30 MB sequential read: the next batch's index page read ahead (synchronous 4 KiB reads: erofs_rs $sync_erofs_rs, C $sync_erofs)" \
		test "$sync_erofs" -ge 3 -a "$sync_erofs_rs" -lt "$sync_erofs"
	blockdev --setra 256 "$L1"
	losetup -d "$L1"
else
	notok "a 30 MB sequential read: mkfs.erofs"
fi
rm -rf /run/tmp/shr/big /run/tmp/shr/bigimg
