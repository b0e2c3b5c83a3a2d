# SPDX-License-Identifier: GPL-2.0
# Tracepoints (include/trace/events/erofs_rs.h): the C driver's events under the erofs_rs
# system have its fields and output format; lookups and inode fills of the same walk of the
# same image give the records the C driver's give; reads give read_folio/readahead/map_blocks
# records naming the file's nid; compressed reads give erofs_rs_decompress records with the
# placement, and the DEFLATE offload erofs_rs_accel ones. Sourced by guest-tests.sh
# (check/ok/notok, $M, $TESTW, $TREE_TOOL, $SUITE).

T=/sys/kernel/tracing
mountpoint -q $T || mount -t tracefs nodev $T
echo 4096 >$T/buffer_size_kb
# tr_on SYSTEM EVENTS...: clear the buffer and enable only these events.
tr_on() {
	sys=$1; shift
	echo 0 >$T/tracing_on; echo >$T/trace
	echo 0 >$T/events/enable
	for e in "$@"; do echo 1 >$T/events/$sys/$e/enable; done
	echo 1 >$T/tracing_on
}
tr_off() { echo 0 >$T/tracing_on; echo 0 >$T/events/enable; }
# The records of the buffer, without task, CPU and time, the device numbers masked.
tr_recs() { sed -n 's/^.*: \(erofs_[a-z_]*: .*\)$/\1/p' $T/trace | sed 's/dev = ([0-9]*,[0-9]*)/dev = (D)/'; }
C_EVENTS="erofs_lookup erofs_fill_inode erofs_read_folio erofs_readahead erofs_map_blocks_enter erofs_map_blocks_exit"

if [ ! -d $T/events/erofs_rs ]; then
	notok "tracing: $T/events/erofs_rs exists"
else
	# 1. The format files: every field (name, type, offset, size, sign) and the print format.
	if [ "$SUITE" != debug ]; then
		for e in $C_EVENTS; do
			grep -E '^\s+field:|^print fmt' $T/events/erofs/$e/format >$M/fmt.c
			grep -E '^\s+field:|^print fmt' $T/events/erofs_rs/$e/format >$M/fmt.rs
			check "tracing: erofs_rs:$e has the C driver's fields and output format" sh -c \
				"[ \$(wc -l <$M/fmt.c) -gt 8 ] && diff $M/fmt.c $M/fmt.rs"
		done
	fi
	# 2. The same walk of the same image under both drivers: the same lookups and inode fills.
	img=$TESTW/img/edge-default.erofs
	walk() { ls -lR "$1" >/dev/null 2>&1; stat "$1/no-such-name" >/dev/null 2>&1; true; }
	for drv in erofs_rs erofs; do
		[ "$drv" = erofs ] && [ "$SUITE" = debug ] && continue
		L=$(losetup -r -f --show "$img")
		tr_on $drv erofs_lookup erofs_fill_inode
		r=$("$TREE_TOOL" mount $drv "$L" /mnt/rs)
		[ "$r" = OK ] && walk /mnt/rs
		tr_off
		tr_recs >$M/trace.walk.$drv
		[ "$r" = OK ] && umount /mnt/rs
		losetup -d "$L"
	done
	check "tracing: a walk of edge-default gives erofs_lookup and erofs_fill_inode records ($(wc -l <$M/trace.walk.erofs_rs))" sh -c \
		"grep -q '^erofs_lookup: dev = (D), pnid = [0-9]*, name:no-such-name, flags:' $M/trace.walk.erofs_rs &&
		 [ \$(grep -c '^erofs_fill_inode: ' $M/trace.walk.erofs_rs) -gt 100 ]"
	[ "$SUITE" = debug ] || check "tracing: ... the records the C driver gives for the same walk" \
		diff $M/trace.walk.erofs $M/trace.walk.erofs_rs
	# 3. Reads of an uncompressed file of a file-backed mount: readahead (fs/erofs/fileio.c's
	# `erofs_fileio_readahead`) and map_blocks records naming it.
	r=$("$TREE_TOOL" mount erofs_rs "$img" /mnt/rs)
	if [ "$r" = OK ]; then
		f=$(find /mnt/rs -type f -size +64k | head -n 1)
		nid=$(stat -c %i "$f")
		tr_on erofs_rs erofs_read_folio erofs_readahead erofs_map_blocks_enter erofs_map_blocks_exit
		cat "$f" >/dev/null
		tr_off
		tr_recs >$M/trace.read
		check "tracing: reading $f (nid $nid, file-backed) gives readahead, map_blocks_enter and _exit records" sh -c "
			grep -Eq '^erofs_readahead: dev = \(D\), nid = $nid, .*raw = 1' $M/trace.read &&
			grep -q '^erofs_map_blocks_enter: dev = (D), nid = $nid, la ' $M/trace.read &&
			grep -Eq '^erofs_map_blocks_exit: dev = \(D\), nid = $nid, flags NULL la [0-9]+ pa [0-9]+ llen [0-9]+ plen [0-9]+ mflags M ret 0' $M/trace.read"
		# One lookup per extent a batch meets, as `erofs_fileio_scan_folio`, not one per page
		# ($f is over 16 pages): at most the distinct extents plus two per readahead batch
		# (the extent a batch shares with the previous one, and the EOF folio's). A flat
		# file's lookup gives the position asked as `la`, so extents are told apart by their
		# end (la + llen).
		look=$(grep -c "^erofs_map_blocks_enter: dev = (D), nid = $nid, la " $M/trace.read || true)
		ext=$(sed -n "s/^erofs_map_blocks_exit: dev = (D), nid = $nid, flags [A-Z]* la \([0-9]*\) pa [0-9]* llen \([0-9]*\) .*/\1 \2/p" $M/trace.read |
			awk '{ print $1 + $2 }' | sort -u | wc -l)
		ra=$(grep -c "^erofs_readahead: dev = (D), nid = $nid" $M/trace.read || true)
		umount /mnt/rs
		cl="?"
		if [ "$SUITE" != debug ] && [ "$("$TREE_TOOL" mount erofs "$img" /mnt/rs)" = OK ]; then
			sync; echo 3 >/proc/sys/vm/drop_caches
			tr_on erofs erofs_map_blocks_enter
			cat "/mnt/rs/${f#/mnt/rs/}" >/dev/null
			tr_off
			cl=$(tr_recs | grep -c "^erofs_map_blocks_enter: dev = (D), nid = $nid, la " || true)
			umount /mnt/rs
		fi
		check "tracing: reading $f (file-backed) looks each extent up once per batch ($look lookups for $ext extents in $ra batches; the C driver: $cl)" \
			sh -c "[ $ext -gt 0 ] && [ $ra -gt 0 ] && [ $look -le $((ext + 2 * ra)) ]"
	else
		notok "tracing: edge-default mounts file-backed ($r)"
	fi
	# 4. Compressed reads on the per-CPU kthreads: erofs_rs_decompress records.
	r=$("$TREE_TOOL" mount erofs_rs /dev/vdb /mnt/rs decomp_pcpu_kthreads)
	if [ "$r" = OK ]; then
		tr_on erofs_rs erofs_rs_decompress erofs_readahead erofs_map_blocks_enter erofs_map_blocks_exit
		cat /mnt/rs/big/* >/dev/null
		filefrag /mnt/rs/big/* >/dev/null 2>&1
		tr_off
		tr_recs >$M/trace.z
		znid=$(stat -c %i /mnt/rs/big/text6m)
		check "tracing: compressed reads on the kthreads give erofs_rs_decompress records (placement, sizes, times)" sh -c "
			grep -q '^erofs_readahead: .* raw = 0' $M/trace.z &&
			grep -Eq '^erofs_map_blocks_exit: dev = \(D\), nid = $znid, flags NULL la [0-9]+ pa [0-9]+ llen [1-9][0-9]* plen [1-9][0-9]* mflags M[A-Z]* ret 0' $M/trace.z &&
			grep -Eq '^erofs_map_blocks_enter: dev = \(D\), nid = $znid, la [0-9]+ llen 0 flags FIEMAP' $M/trace.z &&
			grep -Eq '^erofs_rs_decompress: dev = \(D\), kthread, pclusters [1-9][0-9]* in [1-9][0-9]* out [1-9][0-9]* queued_ns [0-9]+ decode_ns [1-9]' $M/trace.z"
		umount /mnt/rs
	else
		notok "tracing: /dev/vdb mounts with decomp_pcpu_kthreads ($r)"
	fi
	# 5. The DEFLATE offload: one submit and one completion per offloaded pcluster.
	img2k=$(awk '$1 == "zedge" && $2 == "deflate2k" { print $3 }' "$TESTW/list")
	L=$(losetup -r -f --show "$img2k"); d=${L#/dev/}
	r=$("$TREE_TOOL" mount erofs_rs "$L" /mnt/rs decomp_accel=deflate)
	if [ "$r" = OK ]; then
		tr_on erofs_rs erofs_rs_accel
		cat /mnt/rs/text/* >/dev/null
		tr_off
		tr_recs >$M/trace.accel
		n=$(awk '$1 == "offloaded" { print $2 }' /sys/kernel/debug/erofs_rs/$d/accel)
		check "tracing: the offload gives one erofs_rs_accel submit and one complete per pcluster ($n offloaded)" sh -c "
			[ $n -gt 0 ] && [ \$(grep -Ec '^erofs_rs_accel: submit in [1-9][0-9]* out [1-9][0-9]* err 0' $M/trace.accel) = $n ] &&
			[ \$(grep -Ec '^erofs_rs_accel: complete in 0 out [1-9][0-9]* err 0' $M/trace.accel) = $n ]"
		umount /mnt/rs
	else
		notok "tracing: decomp_accel=deflate mounts ($r)"
	fi
	losetup -d "$L"
	# (6 and 7 count what a read does, the same on both kernels: on the normal one only, as
	# they take two minutes on the debug one.)
	[ "$SUITE" = debug ] && return 0
	# 6. Each extent is decoded once by a cold sequential read: the erofs_rs_decompress records
	# of all its runs (queued and in the reader) add up to the file's size, within 2% (a
	# readahead batch ends in the page holding the next extent's first bytes, which the next
	# batch decodes again). A batch that left out the last page of its last extent made the
	# next decode that whole extent again: 1.29x for LZMA with 64 KiB pclusters.
	for v in lzma8m lz4hc64k; do
		img=$(awk -v v=$v '$1 == "zedge" && $2 == v { print $3 }' "$TESTW/list")
		L=$(losetup -r -f --show "$img")
		r=$("$TREE_TOOL" mount erofs_rs "$L" /mnt/rs)
		if [ "$r" = OK ]; then
			sync; echo 3 >/proc/sys/vm/drop_caches
			tr_on erofs_rs erofs_rs_decompress
			dd if=/mnt/rs/big/text6m of=/dev/null bs=1M 2>/dev/null
			tr_off
			out=$(tr_recs | sed -n 's/^erofs_rs_decompress: .* out \([0-9]*\) .*/\1/p' | awk '{ s += $1 } END { print s + 0 }')
			size=$(stat -c %s /mnt/rs/big/text6m)
			check "tracing: a cold read of zedge/$v big/text6m decodes each extent once ($out bytes decoded for $size)" \
				sh -c "[ $out -ge $size ] && [ $out -le $((size + size / 50)) ]"
			umount /mnt/rs
		else
			notok "tracing: zedge/$v mounts ($r)"
		fi
		losetup -d "$L"
	done
	# 7. One extent lookup per extent: a cold sequential read maps each extent it meets once per
	# readahead batch, not once per lcluster (4 KiB here, so 1,536 lookups for the 6 MiB
	# file before map_blocks_until). Lookups without FIEMAP are at most the distinct extents
	# mapped plus two per batch (readmore's head, and the extent a batch shares with the
	# previous one); the C driver's count for the same read is shown beside.
	for v in lz4 lz4hc64k lzma8m; do
		img=$(awk -v v=$v '$1 == "zedge" && $2 == v { print $3 }' "$TESTW/list")
		L=$(losetup -r -f --show "$img")
		r=$("$TREE_TOOL" mount erofs_rs "$L" /mnt/rs)
		if [ "$r" = OK ]; then
			nid=$(stat -c %i /mnt/rs/big/text6m)
			sync; echo 3 >/proc/sys/vm/drop_caches
			tr_on erofs_rs erofs_readahead erofs_map_blocks_enter erofs_map_blocks_exit
			dd if=/mnt/rs/big/text6m of=/dev/null bs=1M 2>/dev/null
			tr_off
			tr_recs >$M/trace.lookups
			umount /mnt/rs
			look=$(grep -c "^erofs_map_blocks_enter: dev = (D), nid = $nid, la [0-9]* llen 0 flags NULL" $M/trace.lookups || true)
			ext=$(sed -n "s/^erofs_map_blocks_exit: dev = (D), nid = $nid, flags [A-Z]* la \([0-9]*\) .*/\1/p" $M/trace.lookups | sort -u | wc -l)
			ra=$(grep -c "^erofs_readahead: dev = (D), nid = $nid" $M/trace.lookups || true)
			cl="?"
			if [ "$SUITE" != debug ]; then
				L2=$(losetup -r -f --show "$img")
				if [ "$("$TREE_TOOL" mount erofs "$L2" /mnt/rs)" = OK ]; then
					sync; echo 3 >/proc/sys/vm/drop_caches
					tr_on erofs erofs_map_blocks_enter
					dd if=/mnt/rs/big/text6m of=/dev/null bs=1M 2>/dev/null
					tr_off
					cl=$(tr_recs | grep -c "^erofs_map_blocks_enter: dev = (D), nid = $nid, la [0-9]* llen 0 flags NULL" || true)
					umount /mnt/rs
				fi
				losetup -d "$L2"
			fi
			check "tracing: a cold read of zedge/$v big/text6m looks each extent up once per batch ($look lookups for $ext extents in $ra batches; the C driver: $cl)" \
				sh -c "[ $ext -gt 0 ] && [ $ra -gt 0 ] && [ $look -le $((ext + 2 * ra)) ]"
		else
			notok "tracing: zedge/$v mounts ($r)"
		fi
		losetup -d "$L"
	done
	# 8. Large folios, as the C driver since 6.11: a cold sequential read of a compressed file
	# puts folios of more than a page in its page cache (filemap:mm_filemap_add_to_page_cache
	# records of its inode, `order=`), and of an uncompressed one too (made here from the same
	# 6 MiB file: readahead grows its folios window by window, so a file of a window or two
	# gets none from either driver); the C driver's figures for the same read beside.
	f=big/text6m
	mkfs.erofs -d0 /run/tmp/lf-plain.erofs "$TESTW/trees/zedge/big" >/dev/null 2>&1
	for v in lz4 lz4hc64k lzma8m deflate zstd plain; do
		if [ $v = plain ]; then
			img=/run/tmp/lf-plain.erofs f=text6m
		else
			img=$(awk -v v=$v '$1 == "zedge" && $2 == v { print $3 }' "$TESTW/list")
		fi
		fig=; rm -f $M/trace.orders.*
		for drv in erofs_rs erofs; do
			L=$(losetup -r -f --show "$img")
			r=$("$TREE_TOOL" mount $drv "$L" /mnt/rs)
			if [ "$r" = OK ]; then
				ino=$(printf %x "$(stat -c %i "/mnt/rs/$f")")
				sync; echo 3 >/proc/sys/vm/drop_caches
				echo 0 >$T/tracing_on; echo >$T/trace; echo 0 >$T/events/enable
				echo 1 >$T/events/filemap/mm_filemap_add_to_page_cache/enable
				echo 1 >$T/tracing_on
				dd if="/mnt/rs/$f" of=/dev/null bs=1M 2>/dev/null
				tr_off
				grep -E " ino $ino pfn=0x[0-9a-f]+ ofs=[0-9]+ order=[0-9]+" $T/trace |
					sed 's/.* order=//' >$M/trace.orders.$drv
				umount /mnt/rs
				fig="$fig $drv: $(grep -vcx 0 $M/trace.orders.$drv) of $(wc -l <$M/trace.orders.$drv) folios large, order up to $(sort -n $M/trace.orders.$drv | tail -n 1);"
			else
				notok "tracing: $drv mounts $v ($r)"
			fi
			losetup -d "$L"
		done
		check "tracing: a cold read of $v $f puts large folios in the page cache ($fig)" \
			sh -c "[ \$(grep -vcx 0 $M/trace.orders.erofs_rs) -gt 0 ]"
	done
	rm -f /run/tmp/lf-plain.erofs
	# 9. MicroLZMA is fed its pages piece by piece, as the C driver feeds its stream decoders
	# (`z_erofs_stream_switch_bufs`): a cold read of an LZMA file, its pclusters read in place
	# and not, calls vm_map_ram no more than the C driver does (a kprobe's hits; both make
	# none on x86-64). Before, erofs_rs mapped each pcluster whose pages were not side by side.
	# The probe is shown to count first: the C driver maps LZ4 output pages.
	echo "p:kprobes/t_vm_map_ram vm_map_ram" >>$T/kprobe_events
	# maps_read DRIVER IMAGE: vm_map_ram calls during a cold read of zedge files, in $maps_DRIVER
	# ('?' if the image does not mount or the probe does not count).
	maps_read() {
		eval "maps_$1=?"
		L=$(losetup -r -f --show "$2")
		r=$("$TREE_TOOL" mount $1 "$L" /mnt/rs)
		if [ "$r" = OK ]; then
			sync; echo 3 >/proc/sys/vm/drop_caches
			echo 1 >$T/events/kprobes/t_vm_map_ram/enable
			h0=$(awk '$1 == "t_vm_map_ram" { print $2 }' $T/kprobe_profile)
			cat /mnt/rs/big/text6m /mnt/rs/text/* >/dev/null 2>&1
			h1=$(awk '$1 == "t_vm_map_ram" { print $2 }' $T/kprobe_profile)
			echo 0 >$T/events/kprobes/t_vm_map_ram/enable
			case "$h0:$h1" in *[!0-9:]* | :* | *:) ;; *) eval "maps_$1=$((h1 - h0))" ;; esac
			umount /mnt/rs
		fi
		losetup -d "$L"
	}
	maps_read erofs "$(awk '$1 == "zedge" && $2 == "lz4" { print $3 }' "$TESTW/list")"
	check "tracing: a kprobe counts vm_map_ram calls (the C driver's cold read of zedge/lz4: $maps_erofs)" \
		sh -c "[ '$maps_erofs' != '?' ] && [ $maps_erofs -gt 0 ]"
	for v in lzma8m lzmafragdd lzmafrag; do
		img=$(awk -v v=$v '$1 == "zedge" && $2 == v { print $3 }' "$TESTW/list")
		# tests/run --quick builds fewer zedge variants (lzmafrag is not among them).
		if [ -z "$img" ]; then
			echo "# tracing: zedge/$v is not built in this run (tests/run --quick): not checked"
			continue
		fi
		maps_read erofs_rs "$img"
		maps_read erofs "$img"
		check "tracing: a cold read of zedge/$v calls vm_map_ram no more than the C driver ($maps_erofs_rs calls; the C driver: $maps_erofs)" \
			sh -c "[ '$maps_erofs_rs' != '?' ] && [ '$maps_erofs' != '?' ] && [ $maps_erofs_rs -le $maps_erofs ]"
	done
	echo "-:kprobes/t_vm_map_ram" >>$T/kprobe_events
fi
