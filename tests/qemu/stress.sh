# SPDX-License-Identifier: GPL-2.0
# Stress: erofs-utils' contrib/stress.c (erofs-stress, built by scripts/setup) with 3 workers
# reading the zedge lz4hc64k image on the virtio disk (/dev/vdb) on the per-CPU kthreads
# and comparing every read with the source tree, inside a memory cgroup whose limit keeps
# reclaiming its page cache, with drop_caches, while CPU 1 goes offline and online
# $STRESS_CYCLES times; then mounts and unmounts of a second mount (switching the kthreads on
# and off) with reads in flight on the first; then rmmod/insmod of erofs_rs with reads in
# flight on a lazily unmounted mount and on the C driver's mount. kmemleak is scanned by vm-run
# at the end. Sourced by guest-tests.sh (uses check/ok/notok, section, $M, $TESTW, $TREE_TOOL).
#
# STRESS_SECS: the least time the stress workers run (tests/run --debug: 30; `make stress`:
# STRESS_SECS=600 by default); STRESS_CYCLES: CPU hotplug cycles (100); STRESS_MOUNTS and
# STRESS_MODS: iterations of the mount and module loops (4 and 2).

STRESS_SECS=${STRESS_SECS:-30}
STRESS_CYCLES=${STRESS_CYCLES:-100}
STRESS_MOUNTS=${STRESS_MOUNTS:-4}
STRESS_MODS=${STRESS_MODS:-2}
ZSRC=$TESTW/trees/zedge
ZS=/sys/kernel/debug/erofs_rs
mountpoint -q /sys/kernel/debug || mount -t debugfs none /sys/kernel/debug
nworkers() { grep -l '^erofs_rs_worker/' /proc/[0-9]*/comm 2>/dev/null | wc -l; }
ncpu=$(grep -c ^processor /proc/cpuinfo)
mkdir -p /mnt/s2
ZIMG=$(awk '$1 == "zedge" && $2 == "lz4hc64k" { print $3 }' "$TESTW/list")

# stress_start DIR WORKERS TAG [CGROUP]: erofs-stress in the background (pid in $spid), line
# buffered so that the operations it did can be counted after it is stopped.
stress_start() {
	# (A new shell, whose $$ is its own pid, joins the cgroup and becomes erofs-stress.)
	sh -c '[ -z "$1" ] || echo $$ >"$1/cgroup.procs" || exit 1; shift; exec stdbuf -oL erofs-stress "$@"' \
		sh "${4:-}" -p "$2" -l 0 -s 20261201 "$1" "$ZSRC" >$M/stress.$3.out 2>$M/stress.$3.err &
	spid=$!
}
# stress_stop TAG WHAT MIN: stop it (SIGTERM: the workers finish their operation) and check
# that it exited 0 (a worker that read a byte unlike the source, or failed a read, stops it
# with an error) after at least MIN reads.
stress_stop() {
	kill -TERM $spid 2>/dev/null
	wait $spid
	src=$?
	nread=$(grep -c 'read_f:\|doscan' $M/stress.$1.out)
	ndrop=$(grep -c 'drop_caches_f:' $M/stress.$1.out)
	check "stress: $2: erofs-stress exit $src, $nread reads and scans, $ndrop drop_caches, every byte equal to the source" \
		sh -c "[ $src = 0 ] && [ $nread -ge $3 ] && ! grep -q . $M/stress.$1.err || { tail -n 20 $M/stress.$1.err; exit 1; }"
}

if [ ! -x "$(command -v erofs-stress)" ]; then
	notok "stress: erofs-stress is not on PATH (scripts/setup builds it)"
elif [ "$("$TREE_TOOL" mount erofs_rs /dev/vdb /mnt/rs decomp_pcpu_kthreads)" != OK ]; then
	notok "stress: mount /dev/vdb decomp_pcpu_kthreads"
else
	section "stress: erofs-stress, memcg, drop_caches, CPU hotplug"
	# A memory cgroup for the workers, memory.high 16 MiB (reclaim, no OOM kill): their page
	# cache (the image's and the comparison directory's) and their buffers (up to 4.5 MiB
	# each) pass it within seconds, so reclaim runs while they read. (At 28 MiB, with
	# drop_caches every 2 s, the cgroup never reached its limit: 0 pages scanned.)
	CG=/sys/fs/cgroup
	mountpoint -q $CG || mount -t cgroup2 none $CG
	echo +memory >$CG/cgroup.subtree_control
	mkdir -p $CG/erofs-stress
	echo 16M >$CG/erofs-stress/memory.high
	t0=$(cut -d. -f1 /proc/uptime)
	stress_start /mnt/rs 3 a $CG/erofs-stress
	sleep 1
	check "stress: erofs-stress runs in the memory cgroup" sh -c "grep -qx $spid $CG/erofs-stress/cgroup.procs"
	# Beside the workers, in the cgroup too, whole passes over the tree checked against the
	# source's checksums: 30 MiB of page cache per pass, so the cgroup must reclaim.
	(cd "$ZSRC" && find . -type f | sort | xargs -d '\n' md5sum) >$M/sa.md5
	rm -f $M/sa.stop $M/sa.bad $M/sa.passes
	sh -c 'echo $$ >"$1/cgroup.procs" || exit 1; cd /mnt/rs || exit 1
		while [ ! -e "$2.stop" ]; do
			md5sum -c --quiet "$2.md5" >>"$2.bad" 2>&1 || echo bad >>"$2.bad"
			echo pass >>"$2.passes"
		done' sh $CG/erofs-stress $M/sa &
	apid=$!
	# drop_caches every 10 s, beside the workers' own (one operation in 64).
	(while :; do sleep 10; echo 3 >/proc/sys/vm/drop_caches; done) &
	dpid=$!
	n=0
	if [ -w /sys/devices/system/cpu/cpu1/online ]; then
		while [ $n -lt "$STRESS_CYCLES" ] && kill -0 $spid 2>/dev/null; do
			echo 0 >/sys/devices/system/cpu/cpu1/online || break
			echo 1 >/sys/devices/system/cpu/cpu1/online || break
			n=$((n + 1))
		done
	fi
	while [ $(($(cut -d. -f1 /proc/uptime) - t0)) -lt "$STRESS_SECS" ] && kill -0 $spid 2>/dev/null; do sleep 1; done
	kill $dpid; wait $dpid 2>/dev/null
	touch $M/sa.stop; wait $apid
	scan=$(awk '$1 == "pgscan" { print $2 }' $CG/erofs-stress/memory.stat)
	stress_stop a "3 workers, $(($(cut -d. -f1 /proc/uptime) - t0)) s on the kthreads, memory.high 16M, $n CPU-1 hotplug cycles" 20
	check "stress: CPU 1 went offline and online $STRESS_CYCLES times during the reads ($n)" sh -c "[ $n -eq $STRESS_CYCLES ]"
	check "stress: the memory cgroup reclaimed while reading ($scan pages scanned)" sh -c "[ ${scan:-0} -gt 0 ]"
	check "stress: $(wc -l <$M/sa.passes 2>/dev/null) whole passes in the cgroup meanwhile, every byte right" \
		sh -c "[ -s $M/sa.passes ] && [ ! -s $M/sa.bad ] || head -n 20 $M/sa.bad"
	check "stress: one erofs_rs_worker per online CPU after hotplug ($ncpu)" sh -c "[ \$(grep -l '^erofs_rs_worker/' /proc/[0-9]*/comm | wc -l) -eq $ncpu ]"
	check "stress: the memory cgroup is left empty and removed" rmdir $CG/erofs-stress
	if [ "$SUITE" = stress ]; then
		echo 3 >/proc/sys/vm/drop_caches
		"$TREE_TOOL" manifest --fields type,size,data /mnt/rs >$M/stress.m 2>&1
		check "stress: afterwards, every byte equals the source tree" diff "$TESTW/manifest/zedge.src.data" $M/stress.m
	fi

	# Mounts and unmounts of a second mount, on the kthreads every other time (starting and
	# stopping the shared workers when the first mount does not hold them), with reads in
	# flight on the first.
	section "stress: mount/umount with reads in flight on another mount"
	mount -o remount,nodecomp_pcpu_kthreads /mnt/rs
	stress_start /mnt/rs 1 b
	(cd "$ZSRC" && md5sum text/t262145 mixed/m1048577) >$M/s2.src
	bad=0 i=0 started=0
	while [ $i -lt "$STRESS_MOUNTS" ]; do
		L=$(losetup -r -f --show "$ZIMG")
		o=; [ $((i % 2)) = 0 ] && o=decomp_pcpu_kthreads
		if [ "$("$TREE_TOOL" mount erofs_rs "$L" /mnt/s2 $o)" = OK ]; then
			[ -n "$o" ] && [ "$(nworkers)" -eq "$ncpu" ] && started=$((started + 1))
			(cd /mnt/s2 && md5sum text/t262145 mixed/m1048577) | cmp -s - $M/s2.src || bad=$((bad + 1))
			umount /mnt/s2 || bad=$((bad + 1))
			[ "$(nworkers)" -eq 0 ] || bad=$((bad + 1))
		else
			bad=$((bad + 1))
		fi
		losetup -d "$L"
		i=$((i + 1))
		echo "# $(cut -d' ' -f1 /proc/uptime) s: mount cycle $i"
	done
	check "stress: $i mounts and unmounts beside a busy mount: every byte right, workers started ($started) and stopped each time" \
		sh -c "[ $bad -eq 0 ] && [ $started -eq $(((STRESS_MOUNTS + 1) / 2)) ]"
	stress_stop b "1 worker on the workqueue during the mount loop" 1
	umount /mnt/rs || notok "stress: umount /dev/vdb"
fi

# rmmod/insmod with reads in flight: on a lazily unmounted erofs_rs mount (the module stays
# pinned until its last reader is done) and on the C driver's mount of the same image.
section "stress: rmmod/insmod with reads in flight"
if lsmod | grep -q '^erofs '; then :; else modprobe erofs; fi
LC=$(losetup -r -f --show "$ZIMG")
if mount -t erofs -o ro "$LC" /mnt/c; then
	(cd "$ZSRC" && find text small -type f | sort | xargs -d '\n' md5sum) >$M/sc.src
	(
		while [ ! -e $M/sc.stop ]; do
			(cd /mnt/c && cut -c35- $M/sc.src | xargs -d '\n' md5sum) | cmp -s - $M/sc.src || echo bad >>$M/sc.bad
			echo pass >>$M/sc.passes
		done
	) &
	cpid=$!
	rm -f $M/sm.why
	i=0 bad=0 busy=0
	while [ $i -lt "$STRESS_MODS" ]; do
		# (Already out when the last try below came after the reader had let go.)
		if lsmod | grep -q '^erofs_rs '; then
			rmmod erofs_rs 2>>$M/sm.why || { bad=$((bad + 1)); echo "cycle $i: rmmod at the start failed" >>$M/sm.why; }
		fi
		modprobe erofs_rs fstype=erofs_rs 2>>$M/sm.why || { bad=$((bad + 1)); echo "cycle $i: modprobe failed" >>$M/sm.why; }
		L=$(losetup -r -f --show "$ZIMG")
		o=; [ $((i % 2)) = 0 ] && o=decomp_pcpu_kthreads
		if [ "$("$TREE_TOOL" mount erofs_rs "$L" /mnt/s2 $o)" = OK ]; then
			echo 3 >/proc/sys/vm/drop_caches
			# Open before the lazy unmount; read after it, once told to, while rmmod is tried.
			# (sl.closing: the read is done and the file about to be closed; a zombie reader
			# still answers kill -0 after it has let the mount go.)
			rm -f $M/sl.open $M/sl.go $M/sl.out $M/sl.closing
			(exec 3</mnt/s2/text/t1572987; touch $M/sl.open; while [ ! -e $M/sl.go ]; do sleep 0.1; done
				md5sum <&3 >$M/sl.out; touch $M/sl.closing; exec 3<&-) &
			rpid=$!
			while [ ! -e $M/sl.open ] && kill -0 $rpid 2>/dev/null; do sleep 0.1; done
			umount -l /mnt/s2 || { bad=$((bad + 1)); echo "cycle $i: umount -l failed" >>$M/sm.why; }
			rmmod erofs_rs 2>/dev/null && { bad=$((bad + 1)); echo "cycle $i: rmmod succeeded while pinned" >>$M/sm.why; } || busy=$((busy + 1))
			touch $M/sl.go
			while [ ! -e $M/sl.closing ] && kill -0 $rpid 2>/dev/null; do
				if rmmod erofs_rs 2>/dev/null; then
					[ -e $M/sl.closing ] || { bad=$((bad + 1)); echo "cycle $i: rmmod succeeded while the file was open" >>$M/sm.why; }
					break
				fi
				busy=$((busy + 1))
				sleep 0.3
			done
			wait $rpid
			[ "$(cut -d' ' -f1 $M/sl.out)" = "$(md5sum <"$ZSRC/text/t1572987" | cut -d' ' -f1)" ] ||
				{ bad=$((bad + 1)); echo "cycle $i: the read after the lazy unmount: $(cat $M/sl.out)" >>$M/sm.why; }
		else
			bad=$((bad + 1)); echo "cycle $i: mount failed" >>$M/sm.why
		fi
		losetup -d "$L"
		i=$((i + 1))
		echo "# $(cut -d' ' -f1 /proc/uptime) s: module cycle $i, rmmod refused $busy times so far"
	done
	touch $M/sc.stop
	wait $cpid
	check "stress: $i rmmod/insmod cycles, each with a read in flight on a lazily unmounted mount: rmmod refused $busy times while it read, every byte right" \
		sh -c "[ $bad -eq 0 ] && [ $busy -ge $i ] || cat $M/sm.why"
	check "stress: the C driver's mount read $(wc -l <$M/sc.passes) passes meanwhile, every byte right" \
		sh -c "[ ! -e $M/sc.bad ] && [ -s $M/sc.passes ]"
	umount /mnt/c
else
	notok "stress: the C driver mounts $ZIMG"
fi
losetup -d "$LC"
lsmod | grep -q '^erofs_rs ' || modprobe erofs_rs fstype=erofs_rs
check "stress: erofs_rs loaded again as fstype erofs_rs" grep -qw erofs_rs /proc/filesystems
