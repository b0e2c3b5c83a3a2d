# SPDX-License-Identifier: GPL-2.0
# Compressed images, beyond the C-driver comparison every image of $TESTW/list gets: where
# decompression runs (the workqueue, or the per-CPU kthreads of decomp_pcpu_kthreads, also
# switched on remount), readahead shapes, CPU hotplug under load, the latency statistics, and
# corrupted compressed images. Sourced by guest-tests.sh (uses its check/ok/notok, $M, $TESTW,
# $TREE_TOOL); /dev/vdb is the zedge lz4hc64k image as a virtio disk.

ZS=/sys/kernel/debug/erofs_rs
mountpoint -q /sys/kernel/debug || mount -t debugfs none /sys/kernel/debug
# runs DEV KIND: how many queues of mount DEV ran where (inline, workqueue, kthread, ...).
runs() { awk -v k="$2" '$1 == "runs" { for (i = 2; i < NF; i += 2) if ($i == k) print $(i + 1) }' "$ZS/$1/decompress_latency"; }
nworkers() { grep -l '^erofs_rs_worker/' /proc/[0-9]*/comm 2>/dev/null | wc -l; }
ZDATA=$TESTW/manifest/zedge.src.data

section "compressed: every layout on the kthreads, split between CPUs"
# Every compressed zedge image, read again with decomp_pcpu_kthreads on a loop device, each
# readahead batch of two pclusters or more split between the CPUs (decomp_split=force: the
# parts after the first go to the other CPUs' kthread workers), read_ahead_kb 1024.
# splits DEV: the parts of reads of mount DEV handed to other CPUs.
splits() { awk '$1 == "split" && $2 == "parts" { print $3 }' "$ZS/$1/decompress_latency"; }
nsplit=0
grep '^zedge ' "$TESTW/list" >$M/zlist
# (On the debug kernel, one image of each algorithm and layout: the normal kernel reads all.)
if [ "$SUITE" = debug ]; then
	grep -E '^zedge (lz4hc1m|lz4ztail|lz4frag|lz4dedupe|lzmafragdd|deflate|zstdmix|mboxlzma) ' $M/zlist
else
	cat $M/zlist
fi >$M/zlist.read
while read -r t v img; do
	L=$(losetup -r -f --show "$img")
	echo 1024 >/sys/block/${L#/dev/}/queue/read_ahead_kb
	r=$("$TREE_TOOL" mount erofs_rs "$L" /mnt/rs decomp_pcpu_kthreads,decomp_split=force)
	if [ "$r" != OK ]; then
		notok "$t/$v (loop, decomp_pcpu_kthreads,decomp_split=force): mounts ($r)"
	else
		"$TREE_TOOL" manifest --fields type,size,data /mnt/rs >$M/zrs 2>&1
		n=$(splits ${L#/dev/})
		nsplit=$((nsplit + ${n:-0}))
		check "$t/$v (loop, decomp_pcpu_kthreads,decomp_split=force, ${n:-?} parts handed off): every byte equals the source tree" diff "$ZDATA" $M/zrs
		# Unmounted at once: the parts still decoding keep it waiting.
		umount /mnt/rs
	fi
	losetup -d "$L"
done <$M/zlist.read
check "decomp_split=force: reads were split between CPUs ($nsplit parts handed off over $(wc -l <$M/zlist.read) images)" \
	test "$nsplit" -gt 0

# Tail fragments over several lclusters (shared/repro/lzma-sub-overflow): a readahead from
# before the fragment's start decodes it in one request, every byte right, without the
# "bogus extent" errors that made the VFS read such pages again one by one (and that panicked
# kernels with Rust overflow checks).
img=$(awk '$1 == "zedge" && $2 == "lzmafragdd" { print $3 }' $M/zlist)
src=$(msrc "$img")
if [ -n "$img" ] && [ "$("$TREE_TOOL" mount erofs_rs "$src" /mnt/rs)" = OK ]; then
	dmark
	echo 3 >/proc/sys/vm/drop_caches
	(cd "$TESTW/trees/zedge" && find . -type f | sort | xargs -d "\n" md5sum) >$M/zfrag.src
	(cd /mnt/rs && find . -type f | sort | xargs -d "\n" md5sum) >$M/zfrag.rs 2>&1
	check "zedge/lzmafragdd: fragments over several lclusters read in one request, every byte right, no error logged" \
		sh -c "diff $M/zfrag.src $M/zfrag.rs && ! dmesg | tail -n +$DMARK | grep -q 'erofs_rs (device'"
	umount /mnt/rs
else
	notok "zedge/lzmafragdd: mount"
fi
mdone "$src"

# Mount options as /proc/mounts shows them: the same as the C driver's for a compressed image.
img=$(awk '$1 == "zedge" { print $3; exit }' $M/zlist)
L1=$(losetup -r -f --show "$img"); L2=$(losetup -r -f --show "$img")
if mount -t erofs -o ro,cache_strategy=readahead "$L1" /mnt/c && [ "$("$TREE_TOOL" mount erofs_rs "$L2" /mnt/rs cache_strategy=readahead)" = OK ]; then
	check "/proc/mounts options equal the C driver's (compressed image, cache_strategy=readahead)" sh -c \
		"[ \"\$(awk '\$2 == \"/mnt/c\" { print \$4 }' /proc/mounts)\" = \"\$(awk '\$2 == \"/mnt/rs\" { print \$4 }' /proc/mounts)\" ]"
	"$TREE_TOOL" manifest --fields type,size,statx /mnt/c >$M/zsx.c 2>&1
	"$TREE_TOOL" manifest --fields type,size,statx /mnt/rs >$M/zsx.rs 2>&1
	check "statx of a compressed image equals the C driver's (STATX_ATTR_COMPRESSED, no DIO alignment)" \
		sh -c "diff $M/zsx.c $M/zsx.rs && grep -q '	[0-9a-f]*[4-7c-f]/' $M/zsx.rs"
	umount /mnt/rs; umount /mnt/c
else
	notok "mount a compressed image with cache_strategy=readahead (C and erofs_rs)"
	umount /mnt/c 2>/dev/null
fi
losetup -d "$L1"; losetup -d "$L2"

section "compressed: virtio disk, placements, hotplug"
# The block-device path with both placements, and the statistics that show which one ran.
D=vdb
if [ "$("$TREE_TOOL" mount erofs_rs /dev/$D /mnt/rs)" = OK ]; then
	echo 3 >/proc/sys/vm/drop_caches
	"$TREE_TOOL" manifest --fields type,size,data /mnt/rs >$M/zrs 2>&1
	check "zedge/lz4hc64k (virtio disk, workqueue): every byte equals the source tree" diff "$ZDATA" $M/zrs
	check "workqueue mount: decompression ran on the workqueue, never on kthreads" \
		sh -c "[ $(runs $D workqueue) -gt 0 ] && [ $(runs $D kthread) -eq 0 ] && [ $(nworkers) -eq 0 ]"
	check "/proc/mounts shows cache_strategy as the C driver does for compressed images" sh -c \
		"grep -q '^/dev/$D /mnt/rs erofs_rs ro,relatime,user_xattr,acl,cache_strategy=readaround ' /proc/mounts"
	check "decompress_latency reports percentiles" grep -Eq '^sched_workqueue count [1-9][0-9]* mean_ns [0-9]+ p50_ns [0-9]+ p90_ns [0-9]+ p99_ns' $ZS/$D/decompress_latency
	# As the C driver: virtio-blk completes bios in interrupt context, which turns
	# sync_decompress on, and then readahead of at most 12 KiB decodes in the reader.
	check "sync_decompress turned on by the virtio disk's atomic completions" sh -c "[ \"\$(cat $ZS/$D/sync_decompress)\" = 1 ]"
	small() { # reads every file of at most 12 KiB from a cold cache; prints "inline workqueue" runs
		echo 1 >$ZS/$D/reset; echo 3 >/proc/sys/vm/drop_caches
		find /mnt/rs -type f -size -13k -exec cat {} + >/dev/null
		echo "$(runs $D inline) $(runs $D workqueue)"
	}
	echo 2 >$ZS/$D/sync_decompress; off=$(small)
	echo 1 >$ZS/$D/sync_decompress; on=$(small)
	# (Off, the reader still decodes pclusters whose data was cached: no I/O to wait for.)
	check "sync_decompress: small files decode in the reader when on (inline, workqueue: $on), on workers when off ($off)" \
		sh -c "set -- $on $off; [ \$1 -gt 0 ] && [ \$2 -eq 0 ] && [ \$4 -gt 0 ]"
	check "sync_decompress refuses values above 2 with EINVAL, as the C driver's sysfs file" sh -c \
		"! (echo 3 >$ZS/$D/sync_decompress) 2>/dev/null && [ \"\$(cat $ZS/$D/sync_decompress)\" = 1 ]"
	check "remount -o decomp_pcpu_kthreads" mount -o remount,decomp_pcpu_kthreads /mnt/rs
	check "decomp_pcpu_kthreads shows in /proc/mounts" grep -q "^/dev/$D /mnt/rs erofs_rs ro,relatime,user_xattr,acl,cache_strategy=readaround,decomp_pcpu_kthreads " /proc/mounts
	ncpu=$(grep -c ^processor /proc/cpuinfo)
	check "one erofs_rs_worker per online CPU ($ncpu), SCHED_FIFO" sh -c "
		[ $(nworkers) -eq $ncpu ] || exit 1
		for p in \$(grep -l '^erofs_rs_worker/' /proc/[0-9]*/comm); do
			p=\${p#/proc/}; chrt -p \${p%/comm} | grep -q SCHED_FIFO || exit 1
		done"
	echo 1 >$ZS/$D/reset
	echo 3 >/proc/sys/vm/drop_caches
	"$TREE_TOOL" manifest --fields type,size,data /mnt/rs >$M/zrs 2>&1
	check "zedge/lz4hc64k (virtio disk, kthreads after remount): every byte equals the source tree" diff "$ZDATA" $M/zrs
	check "kthread mount: decompression ran on the kthreads" sh -c "[ $(runs $D kthread) -gt 0 ] && [ $(runs $D workqueue) -eq 0 ]"

	# Many small asynchronous reads at once (sync_decompress off, so every queue goes to a
	# kthread when its last bio completes, possibly on the other CPU before the submitter has
	# returned): the submitter must not touch a committed queue, which the worker frees (the
	# use-after-free of issue 12; KASAN reports it on the debug kernel).
	echo 2 >$ZS/$D/sync_decompress; echo 1 >$ZS/$D/reset
	(cd "$TESTW/trees/zedge" && find . -type f -size -65k | sort | xargs -d "\n" md5sum) >$M/zsmall.src
	for round in 1 2 3; do
		echo 3 >/proc/sys/vm/drop_caches
		for j in 1 2 3 4; do
			(cd /mnt/rs && sort -R $M/zsmall.src | cut -c35- | xargs -d "\n" md5sum | sort -k2 >$M/zsmall.$j) &
		done
		wait
		for j in 1 2 3 4; do sort -k2 $M/zsmall.src | diff -q - $M/zsmall.$j >/dev/null || echo "round $round reader $j" >>$M/zsmall.bad; done
	done
	check "4 parallel readers x 3 rounds of $(wc -l <$M/zsmall.src) small files, asynchronous on the kthreads ($(runs $D kthread) runs): every byte right" \
		sh -c "[ ! -e $M/zsmall.bad ] && [ $(runs $D kthread) -gt 0 ]"
	echo 0 >$ZS/$D/sync_decompress

	# CPU hotplug: readers check every byte while CPU 1 goes offline and online again, their
	# reads split between the CPUs (a part sent to CPU 1 as it goes runs on the workqueue).
	check "remount -o decomp_split=force" mount -o remount,decomp_split=force /mnt/rs
	echo 1 >$ZS/$D/reset
	if [ -w /sys/devices/system/cpu/cpu1/online ]; then
		(
			for i in 1 2 3; do
				echo 3 >/proc/sys/vm/drop_caches
				"$TREE_TOOL" manifest --fields type,size,data /mnt/rs >$M/zhp.$i 2>&1
			done
		) &
		rd=$!
		n=0
		while kill -0 $rd 2>/dev/null && [ $n -lt 40 ]; do
			echo 0 >/sys/devices/system/cpu/cpu1/online; sleep 0.2
			echo 1 >/sys/devices/system/cpu/cpu1/online; sleep 0.2
			n=$((n + 1))
		done
		wait $rd
		check "CPU hotplug ($n offline/online cycles) under split readers ($(splits $D) parts handed off): every byte of 3 passes equals the source" \
			sh -c "diff $ZDATA $M/zhp.1 && diff $ZDATA $M/zhp.2 && diff $ZDATA $M/zhp.3 && [ $(splits $D) -gt 0 ]"
		check "after hotplug: one worker per online CPU again" sh -c "[ $(nworkers) -eq $ncpu ]"
	else
		notok "CPU hotplug: /sys/devices/system/cpu/cpu1/online is not writable (the guest needs 2 CPUs)"
	fi
	check "remount -o decomp_split=auto" sh -c "mount -o remount,decomp_split=auto /mnt/rs && ! grep -q decomp_split /proc/mounts"
	check "remount -o nodecomp_pcpu_kthreads stops the workers" sh -c \
		"mount -o remount,nodecomp_pcpu_kthreads /mnt/rs && ! grep -q decomp_pcpu_kthreads /proc/mounts && [ \$(grep -l '^erofs_rs_worker/' /proc/[0-9]*/comm 2>/dev/null | wc -l) -eq 0 ]"
	umount /mnt/rs
else
	notok "mount /dev/$D"
fi
r=$("$TREE_TOOL" mount erofs_rs /dev/$D /mnt/rs decomp_pcpu_kthreads=1)
check "decomp_pcpu_kthreads=1 is refused with EINVAL ($r)" sh -c "[ \"$r\" = 'ERR EINVAL 22' ]"

section "compressed: readahead shapes"
# Readahead shapes on a loop device: none (every page through read_folio), 4 MiB, random and
# sequential fadvise, and page faults through mmap.
img=$(awk '$2 == "lz4hc64k" && $1 == "zedge" { print $3 }' $M/zlist)
if [ -n "$img" ]; then
	for ra in 0 8192; do
		L=$(losetup -r -f --show "$img")
		blockdev --setra $ra "$L"
		if [ "$("$TREE_TOOL" mount erofs_rs "$L" /mnt/rs)" = OK ]; then
			"$TREE_TOOL" manifest --fields type,size,data /mnt/rs >$M/zra 2>&1
			check "readahead $ra sectors: every byte equals the source tree" diff "$ZDATA" $M/zra
			if [ $ra = 0 ]; then
				# Page faults of a MADV_RANDOM mapping skip readahead: every page goes through
				# read_folio, which decompresses in the reader (synchronous decompression).
				dev=${L#/dev/}
				w0=$(runs $dev workqueue); i0=$(runs $dev inline)
				echo 3 >/proc/sys/vm/drop_caches
				check "read_folio (mmap + MADV_RANDOM faults): every byte equals the source" python3 -c '
import mmap, os, sys
src, dst = sys.argv[1], sys.argv[2]
for root, dirs, files in os.walk(src):
    for f in files:
        p = os.path.join(root, f); q = os.path.join(dst, os.path.relpath(p, src))
        want = open(p, "rb").read()
        if not want: continue
        with open(q, "rb") as fq:
            m = mmap.mmap(fq.fileno(), 0, prot=mmap.PROT_READ)
            m.madvise(mmap.MADV_RANDOM)
            for o in range(len(want) - 1, -1, -4096):
                if m[o] != want[o]: sys.exit("%s at %d" % (q, o))
            if m[:] != want: sys.exit(q)
            m.close()
' "$TESTW/trees/zedge" /mnt/rs
				check "read_folio decompressed in the reader, not on a worker" sh -c "[ $(runs $dev inline) -gt $i0 ] && [ $(runs $dev workqueue) -eq $w0 ]"
			fi
			umount /mnt/rs
		else
			notok "readahead $ra: mount"
		fi
		# A detached loop device keeps its readahead: give the next user the default.
		blockdev --setra 256 "$L"
		losetup -d "$L"
	done
	L=$(losetup -r -f --show "$img")
	if [ "$("$TREE_TOOL" mount erofs_rs "$L" /mnt/rs decomp_pcpu_kthreads)" = OK ]; then
		check "fadvise RANDOM (4 KiB reads in shuffled order) and SEQUENTIAL equal the source" python3 -c '
import os, random, sys
src, dst = sys.argv[1], sys.argv[2]
rnd = random.Random(7)
for root, dirs, files in os.walk(src):
    for f in files:
        p = os.path.join(root, f); q = os.path.join(dst, os.path.relpath(p, src))
        want = open(p, "rb").read()
        for advice in (os.POSIX_FADV_RANDOM, os.POSIX_FADV_SEQUENTIAL):
            fd = os.open(q, os.O_RDONLY)
            os.posix_fadvise(fd, 0, 0, advice)
            offs = list(range(0, len(want), 4096)); rnd.shuffle(offs)
            for o in offs:
                if os.pread(fd, 4096, o) != want[o:o + 4096]:
                    sys.exit("%s at %d (advice %d)" % (q, o, advice))
            os.close(fd)
        os.posix_fadvise(os.open(q, os.O_RDONLY), 0, 0, os.POSIX_FADV_DONTNEED)
' "$TESTW/trees/zedge" /mnt/rs
		echo 3 >/proc/sys/vm/drop_caches
		"$TREE_TOOL" manifest --fields type,data --mmap /mnt/rs >$M/zmm 2>&1
		"$TREE_TOOL" manifest --fields type,data "$TESTW/trees/zedge" >$M/zsrc 2>&1
		check "mmap page faults: every byte equals the source tree" diff $M/zsrc $M/zmm
		umount /mnt/rs
	else
		notok "fadvise/mmap: mount"
	fi
	losetup -d "$L"
fi

section "compressed: corrupted images"
# Corrupted compressed images (tests/corrupt-z.py), for each algorithm: invalid indexes and
# streams fail the read with EUCLEAN and a dmesg line naming the nid; the C driver fails them
# too; nothing oopses or hangs.
for zdir in "$TESTW"/zcorrupt/*/; do
	z=$(basename "$zdir")
	if [ ! -f "$zdir/zexpect" ]; then
		notok "zcorrupt $z: $zdir/zexpect missing"
		continue
	fi
	while read -r name path nid kind; do
		zimg=$zdir/$name.img
		src=$(msrc "$zimg")
		r=$("$TREE_TOOL" mount erofs_rs "$src" /mnt/rs)
		if [ "$r" != OK ]; then
			[ "$kind" = any ] && ok "zcorrupt $z/$name: mount fails cleanly ($r)" || notok "zcorrupt $z/$name: mounts ($r)"
			mdone "$src"
			continue
		fi
		dmark
		cmp "/mnt/rs$path" "$TESTW/trees/zedge/text$path" >$M/zt 2>&1
		"$TREE_TOOL" manifest --fields type,size,data /mnt/rs >/dev/null 2>&1
		if [ "$kind" = fail ]; then
			# The read fails with EUCLEAN; or, when the bad field is one the read did not need
			# (erofs_rs maps whole extents forward where the C driver looks back from each
			# page), the corruption is still reported and every byte read is right.
			# (Through a loop device, on the debug kernel, a pcluster that fails to decode
			# on a worker fails the read with EIO, as the C driver's do on block devices.)
			want="Structure needs cleaning"
			[ "$SUITE" = debug ] && want="Structure needs cleaning\|Input/output error"
			check "zcorrupt $z/$name: reading $path fails with EUCLEAN (or is right), dmesg names nid $nid" sh -c \
				"{ grep -q '$want' $M/zt || [ ! -s $M/zt ]; } && dmesg | tail -n +$DMARK | grep -q 'erofs_rs (device .*): .*nid $nid'"
		else
			ok "zcorrupt $z/$name: read and walked without a crash"
		fi
		umount /mnt/rs || notok "zcorrupt $z/$name: umount"
		mdone "$src"
		# (The C driver's reads of corrupted images only on the normal kernel: on the debug
		# one its EROFS_FS_DEBUG assertions are BUG_ONs.)
		if [ "$kind" = fail ] && [ "$SUITE" != debug ]; then
			L=$(losetup -r -f --show "$zimg")
			if mount -t erofs -o ro "$L" /mnt/c 2>/dev/null; then
				! cat "/mnt/c$path" >/dev/null 2>&1 && ok "zcorrupt $z/$name: the C driver fails the read too" ||
					notok "zcorrupt $z/$name: the C driver fails the read too"
				umount /mnt/c
			else
				ok "zcorrupt $z/$name: the C driver refuses the mount"
			fi
			losetup -d "$L"
		fi
	done <"$zdir/zexpect"
done

section "compressed: parallel LZMA readers"
# Many readers of a large-dictionary LZMA image at once: the decoder contexts are a bounded
# pool (lzma_streams), so memory stays bounded and every byte is right.
img=$(awk '$2 == "lzma8m" && $1 == "zedge" { print $3 }' $M/zlist)
src=$(msrc "$img")
if [ -n "$img" ] && [ "$("$TREE_TOOL" mount erofs_rs "$src" /mnt/rs)" = OK ]; then
	echo 3 >/proc/sys/vm/drop_caches
	v0=$(awk '/^VmallocUsed/ { print $2 }' /proc/meminfo)
	vmax=$v0
	for i in 1 2 3 4 5 6 7 8; do
		(cd /mnt/rs && find . -type f | sort | shuf --random-source=/proc/self/exe 2>/dev/null | xargs md5sum >$M/zpar.$i 2>&1) &
	done
	while [ "$(jobs -r | wc -l)" -gt 0 ]; do
		v=$(awk '/^VmallocUsed/ { print $2 }' /proc/meminfo); [ "$v" -gt "$vmax" ] && vmax=$v
		sleep 0.2
	done
	wait
	(cd "$TESTW/trees/zedge" && find . -type f | sort | xargs md5sum) | sort >$M/zpar.src
	check "8 parallel readers of an 8 MiB-dictionary LZMA image: every byte right" sh -c "
		for i in 1 2 3 4 5 6 7 8; do sort $M/zpar.\$i | diff -q $M/zpar.src - >/dev/null || exit 1; done"
	check "LZMA decoders stay bounded: vmalloc grew $(((vmax - v0) / 1024)) MiB (streams: $(cat /sys/module/erofs_rs/parameters/lzma_streams))" \
		sh -c "[ $((vmax - v0)) -lt 65536 ]"
	umount /mnt/rs
else
	notok "lzma8m: mount for parallel readers"
fi
mdone "$src"
