# SPDX-License-Identifier: GPL-2.0
# Sourced by guest-tests.sh (uses its check/notok/section/dmark and $M): umount, then rmmod at
# once, with compressed reads in flight. A superblock's kill waits until every decompression
# queue it made has run its work and is freed (vfs/zdata.rs, `Inflight`), so no bio of it
# completes into an unloaded module or reads a device it closed, whatever its work holds.
#
# The image sits behind a dm-delay device whose reads take $delay ms: each cycle mounts it,
# starts cold readers of its big files (dd), kills them while their first reads and readahead
# are in flight, unmounts at once (timed: it waits for the queues) and unloads the module at
# once; the next cycle loads it again. Under /dev/vdb (virtio) bios complete in interrupt
# context and their queues run on the workqueue or, with `decomp_pcpu_kthreads`, on the
# per-CPU kthreads: both are tried. Under a loop device they complete in its worker, and run
# there whatever the option. A held descriptor on the delay device keeps its page cache, so
# metadata is read once, not per cycle.
#
# INFLIGHT_DISK: the image as a virtio disk (default /dev/vdb, tests/run's zedge lz4hc64k);
# INFLIGHT_FILE: the same image as a file, for the loop device (default from $TESTW/list);
# INFLIGHT_CYCLES: cycles per combination (default 3; 2 on the debug kernel, slower, to keep
# the section within about a minute there).

inflight_cycles=3
[ "${SUITE:-}" != debug ] || inflight_cycles=2
inflight_cycles=${INFLIGHT_CYCLES:-$inflight_cycles}
inflight_disk=${INFLIGHT_DISK:-/dev/vdb}
inflight_file=${INFLIGHT_FILE:-$(awk '$1 == "zedge" && $2 == "lz4hc64k" { print $3 }' "$TESTW/list" 2>/dev/null)}
delay=500
# The files read: some of the image's biggest.
inflight_files="big/text6m dup/copy1 dup/shifted mixed/m1572987 text/t1572987"
now_ms() { echo $(($(date +%s%N) / 1000000)); }

# inflight_run DEV NAME OPTIONS...: the cycles on DEV, mounted with each of OPTIONS in turn
# ("-" for none).
inflight_run() {
	dev=$1 what=$2
	shift 2
	if ! echo "0 $(blockdev --getsz "$dev") delay $dev 0 0" |
		DM_DISABLE_UDEV=1 dmsetup create --readonly erofs-inflight; then
		notok "$what: dm-delay"; return
	fi
	D=/dev/$(dmsetup info -c --noheadings -o blkdevname erofs-inflight)
	exec 9<"$D"
	# Metadata first, undelayed (the inodes, the start of their block maps), by readers that
	# are not killed: a reader killed while it waits for metadata fails its read and says so
	# ("failed to read inode meta block ...: -4"), as the C driver does. The held descriptor
	# keeps it in the device's page cache; then the reads are delayed.
	lsmod | grep -q '^erofs_rs ' || modprobe erofs_rs fstype=erofs_rs
	if mount -t erofs_rs -o ro "$D" /mnt/rs; then
		for f in $inflight_files; do dd if="/mnt/rs/$f" of=/dev/null bs=64k count=1 2>/dev/null; done
		umount /mnt/rs
	fi
	echo "0 $(blockdev --getsz "$dev") delay $dev 0 $delay" |
		DM_DISABLE_UDEV=1 dmsetup reload erofs-inflight &&
		DM_DISABLE_UDEV=1 dmsetup resume erofs-inflight || notok "$what: dm-delay of $delay ms"
	dmark
	for o in "$@"; do
		[ "$o" != - ] || o=
		t="$what${o:+, $o}"
		rm -f $M/if.why
		i=0 bad=0 slow=0 maxms=0
		while [ $i -lt "$inflight_cycles" ]; do
			i=$((i + 1))
			lsmod | grep -q '^erofs_rs ' || modprobe erofs_rs fstype=erofs_rs ||
				{ bad=$((bad + 1)); echo "cycle $i: modprobe failed" >>$M/if.why; break; }
			if ! mount -t erofs_rs -o "ro${o:+,$o}" "$D" /mnt/rs 2>>$M/if.why; then
				bad=$((bad + 1)); echo "cycle $i: mount failed" >>$M/if.why; break
			fi
			pids=
			for f in $inflight_files; do
				dd if="/mnt/rs/$f" of=/dev/null bs=1M 2>/dev/null &
				pids="$pids $!"
			done
			# Killed while they wait for their first reads; their readahead goes on.
			sleep 0.2
			# shellcheck disable=SC2086
			kill -9 $pids 2>/dev/null
			# shellcheck disable=SC2086
			wait $pids 2>/dev/null
			t0=$(now_ms)
			umount /mnt/rs 2>>$M/if.why || { bad=$((bad + 1)); echo "cycle $i: umount failed" >>$M/if.why; break; }
			ms=$(($(now_ms) - t0))
			[ $ms -lt $((delay / 3)) ] || slow=$((slow + 1))
			[ $ms -le $maxms ] || maxms=$ms
			rmmod erofs_rs 2>>$M/if.why || { bad=$((bad + 1)); echo "cycle $i: rmmod right after umount failed" >>$M/if.why; }
		done
		echo "# $(cut -d' ' -f1 /proc/uptime) s: $t: $i cycles, $slow umounts waited, the longest $maxms ms"
		check "umount and rmmod with reads in flight ($t): $i cycles, rmmod at once each time" \
			sh -c "[ $bad -eq 0 ] || cat $M/if.why"
		# Else the reads were done before the umount, and the cycles showed nothing.
		check "umount and rmmod with reads in flight ($t): umount waited for them ($slow of $i, up to $maxms ms)" \
			test $slow -gt 0
	done
	exec 9<&-
	DM_DISABLE_UDEV=1 dmsetup remove erofs-inflight
}

section "umount and rmmod with reads in flight"
if [ -b "$inflight_disk" ]; then
	inflight_run "$inflight_disk" virtio - decomp_pcpu_kthreads decomp_pcpu_kthreads,decomp_split=force
else
	notok "umount and rmmod with reads in flight: $inflight_disk (tests/run's second disk)"
fi
# (A copy in tmpfs: a loop device reads a file of the 9p root slowly.)
if [ -f "$inflight_file" ] && cp "$inflight_file" "$TMPDIR/inflight.erofs"; then
	L=$(losetup -r -f --show "$TMPDIR/inflight.erofs")
	inflight_run "$L" loop - decomp_split=force
	losetup -d "$L"
	rm -f "$TMPDIR/inflight.erofs"
else
	notok "umount and rmmod with reads in flight: the image file ($inflight_file)"
fi
lsmod | grep -q '^erofs_rs ' || modprobe erofs_rs fstype=erofs_rs
# (Nothing logged since the last cycles' metadata was read, but the mounts' own lines.)
check "after the in-flight cycles: erofs_rs loads again and reads a file whole, right, no error logged" sh -c "
	mount -t erofs_rs -o ro '$inflight_disk' /mnt/rs && got=\$(md5sum </mnt/rs/big/text6m) && umount /mnt/rs &&
	[ \"\$got\" = \"\$(md5sum <'$TESTW/trees/zedge/big/text6m')\" ] &&
	! dmesg | tail -n +$DMARK | grep 'erofs_rs (device' | grep -v ': mounted with root inode'"
