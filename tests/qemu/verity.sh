# SPDX-License-Identifier: GPL-2.0
# The Android stack: a system partition built as Android's build does (tests/run: mkfs.erofs
# -zlz4hc -C262144 --mount-point=system --fs-config-file --file-contexts) on dm-verity over a
# virtio disk (/dev/vdc, hash tree after the data), mounted ro,decomp_pcpu_kthreads by erofs_rs
# and by the C driver. Bio completions come from dm-verity: its verify workqueue, then its BH
# mode (try_verify_in_tasklet, veritysetup --use-tasklets). A copy with one byte flipped in a
# compressed and in a plain file (loop device, hash tree unchanged) must fail those two files
# with EIO and read every other file right. Sourced by guest-tests.sh (uses check/ok/notok,
# dmark, $M, $TESTW, $TREE_TOOL, $FULL, runs and nworkers from ztests.sh).

A=$TESTW/android
AT=$TESTW/trees/android
ADATA=$TESTW/manifest/android.src.data
. "$A/verity.env"
# No udev in the guest: libdevmapper makes the /dev/mapper nodes itself.
export DM_DISABLE_UDEV=1
vopen() { # device name [--use-tasklets]
	veritysetup open --hash-offset="$HASHOFF" "$1" "$2" "$1" "$ROOTHASH" $3
}
dmname() { dmsetup info -c --noheadings -o blkdevname "$1"; }

check "android: veritysetup verify of /dev/vdc against the root hash" \
	veritysetup verify --hash-offset="$HASHOFF" /dev/vdc /dev/vdc "$ROOTHASH"
# (One verity device at a time: veritysetup opens its data device exclusively.)
check "android: veritysetup open (dm-verity workqueue)" vopen /dev/vdc android-rs
check "android: the verity table has no try_verify_in_tasklet" \
	sh -c 'dmsetup table android-rs | grep -q " verity 1 " && ! dmsetup table android-rs | grep -q try_verify_in_tasklet'

android_read() { # tag sync_decompress why where: every byte through read(2) and mmap; decompression
	# ran only WHERE (completion: in dm-verity's verify workqueue, which completes the bios in
	# task context, as the C driver decodes there; kthread: handed from softirq to the kthreads)
	tag=$1 dev=$(dmname android-rs)
	echo 1 >"$ZS/$dev/reset"
	echo 3 >/proc/sys/vm/drop_caches
	"$TREE_TOOL" manifest --fields type,size,data /mnt/rs >$M/ars 2>&1
	check "android ($tag): every byte through read(2) equals the source tree" diff "$ADATA" $M/ars
	# (On the debug kernel, mmap with the workqueue and parallel readers with the BH mode.)
	if [ "$SUITE" != debug ] || [ "$2" = 0 ]; then
		echo 3 >/proc/sys/vm/drop_caches
		"$TREE_TOOL" manifest --fields type,size,data --mmap /mnt/rs >$M/arsm 2>&1
		check "android ($tag): every byte through mmap equals the source tree" diff "$ADATA" $M/arsm
	fi
	if [ "$SUITE" != debug ] || [ "$2" = 1 ]; then
		# Four readers at once, each over every file in its own order.
		(cd "$AT/tree" && find . -type f | sort | xargs -d '\n' md5sum) >$M/amd5.src
		echo 3 >/proc/sys/vm/drop_caches
		for j in 1 2 3 4; do
			(cd /mnt/rs && cut -c35- $M/amd5.src | shuf | xargs -d '\n' md5sum | sort -k2 >$M/amd5.$j 2>&1) &
		done
		wait
		check "android ($tag): 4 parallel readers, every byte right" sh -c \
			"sort -k2 $M/amd5.src >$M/amd5.s; for j in 1 2 3 4; do diff $M/amd5.s $M/amd5.\$j || exit 1; done"
	fi
	# (In BH mode dm-verity still verifies blocks whose hashes are not cached on its
	# workqueue: some completions there are in task context too.)
	only=0; [ "$4" = completion ] && only=$(runs "$dev" kthread)
	check "android ($tag): decompression ran in $4 ($(runs "$dev" "$4") runs), never on the workqueue" \
		sh -c "[ $(runs "$dev" "$4") -gt 0 ] && [ $(runs "$dev" workqueue) -eq 0 ] && [ $only -eq 0 ]"
	# sync_decompress turns on (1) at the first bio completed in atomic context, as the C
	# driver's: dm-verity's BH mode completes bios in softirq context, its workqueue never.
	check "android ($tag): sync_decompress is $2 (bio completions $3)" \
		sh -c "[ \"\$(cat $ZS/$dev/sync_decompress)\" = $2 ]"
}

# The C driver first, then erofs_rs, on the same device.
if mount -t erofs -o ro /dev/mapper/android-rs /mnt/c; then
	"$TREE_TOOL" manifest --fields $FULL,xattrs /mnt/c >$M/ac 2>&1
	umount /mnt/c
else
	notok "android: the C driver mounts dm-verity"
fi
echo 3 >/proc/sys/vm/drop_caches
r=$("$TREE_TOOL" mount erofs_rs /dev/mapper/android-rs /mnt/rs decomp_pcpu_kthreads)
if [ "$r" = OK ]; then
	ok "android: erofs_rs mounts dm-verity ro,decomp_pcpu_kthreads"
	check "android: /proc/mounts shows ro and decomp_pcpu_kthreads" \
		grep -q "^/dev/mapper/android-rs /mnt/rs erofs_rs ro,.*decomp_pcpu_kthreads" /proc/mounts
	"$TREE_TOOL" manifest --fields $FULL,xattrs /mnt/rs >$M/ars 2>&1
	check "android: every stat field, xattr, readdir order and byte equal the C driver's" diff $M/ac $M/ars
	# Every path's owner, mode (setuid included) and SELinux label as fs_config and
	# file_contexts gave them (tests/mktree-android's expect).
	while read -r p uid gid mode label; do
		s=$(stat -c '%u %g %a' "/mnt/rs$p")
		l=$(getfattr -h --absolute-names --only-values -n security.selinux "/mnt/rs$p" 2>&1)
		[ "$s $l" = "$uid $gid $mode $label" ] || echo "$p: $s $l, want $uid $gid $mode $label"
	done <"$AT/expect" >$M/aexpect
	check "android: every path's uid, gid, mode and security.selinux as fs_config and file_contexts say ($(wc -l <"$AT/expect") paths)" \
		sh -c "[ ! -s $M/aexpect ] || { cat $M/aexpect; exit 1; }"
	# capabilities=0x3000 (CAP_NET_ADMIN, CAP_NET_RAW): a vfs_cap_data revision 2, effective.
	check "android: bin/netd has security.capability from fs_config" sh -c \
		"getfattr -e hex -n security.capability /mnt/rs/bin/netd 2>&1 | grep -qx security.capability=0x0100000200300000000000000000000000000000 || getfattr -e hex -n security.capability /mnt/rs/bin/netd"
	android_read "dm-verity workqueue" 0 "in process context only" completion
	umount /mnt/rs || notok "android: umount erofs_rs"
else
	notok "android: erofs_rs mounts dm-verity ro,decomp_pcpu_kthreads ($r)"
fi
veritysetup close android-rs

section "android: dm-verity try_verify_in_tasklet"
# dm-verity's BH mode: bios verified and completed in softirq context.
if vopen /dev/vdc android-rs --use-tasklets; then
	check "android: the verity table has try_verify_in_tasklet (veritysetup --use-tasklets)" \
		sh -c 'dmsetup table android-rs | grep -q try_verify_in_tasklet'
	r=$("$TREE_TOOL" mount erofs_rs /dev/mapper/android-rs /mnt/rs decomp_pcpu_kthreads)
	if [ "$r" = OK ]; then
		android_read "dm-verity try_verify_in_tasklet" 1 "in softirq context seen" kthread
		umount /mnt/rs || notok "android: umount erofs_rs (tasklet)"
	else
		notok "android: erofs_rs mounts dm-verity with try_verify_in_tasklet ($r)"
	fi
	veritysetup close android-rs
else
	notok "android: veritysetup open --use-tasklets"
fi

section "android: a flipped data byte under dm-verity"
# One flipped byte in each of two files' data: reading them fails with EIO (twice: nothing
# bad is left cached), dm-verity names the corrupted block, every other file reads right;
# the C driver sees the same.
L=$(losetup -r -f --show "$A/flipped.img")
cut -d' ' -f1 "$A/flipped" >$M/aflip
awk 'NR == FNR { bad[substr($1, 2)] = 1; next } { split($0, c, "\t"); if (c[1] in bad) { $0 = c[1] "\t" c[2] "\t" c[3] "\tERR:5" } } 1' \
	$M/aflip "$ADATA" >$M/aflip.want
flipped() { # driver mountpoint
	"$TREE_TOOL" manifest --fields type,size,data "$2" >$M/aflip.$1 2>&1
	check "android flipped ($1): EIO on $(tr '\n' ' ' <$M/aflip)and every other file equals the source" \
		diff $M/aflip.want $M/aflip.$1
	check "android flipped ($1): read again, still EIO" sh -c "
		for f in \$(cat $M/aflip); do
			cat \"$2\$f\" >/dev/null 2>$M/aflip.err && { echo \"\$f read without an error\"; exit 1; }
			grep -q 'Input/output error' $M/aflip.err || { cat $M/aflip.err; exit 1; }
		done"
	# Bytes before the bad pcluster (the first 256 KiB pcluster holds 538391) read right.
	check "android flipped ($1): app/Calc/Calc.apk before the bad pcluster reads right" sh -c \
		"[ \"\$(head -c 500000 $2/app/Calc/Calc.apk | md5sum)\" = \"\$(head -c 500000 $AT/tree/app/Calc/Calc.apk | md5sum)\" ]"
}
if vopen "$L" android-bad; then
	dmark
	r=$("$TREE_TOOL" mount erofs_rs /dev/mapper/android-bad /mnt/rs decomp_pcpu_kthreads)
	if [ "$r" = OK ]; then
		echo 3 >/proc/sys/vm/drop_caches
		flipped erofs_rs /mnt/rs
		check "android flipped: dm-verity logged the corrupted data blocks" sh -c \
			"dmesg | tail -n +$DMARK | grep -q 'verity.*data block [0-9]* is corrupted'"
		umount /mnt/rs || notok "android flipped: umount erofs_rs"
	else
		notok "android flipped: erofs_rs mounts ($r)"
	fi
	veritysetup close android-bad
	# The C driver (on the debug kernel too: I/O errors trip none of its EROFS_FS_DEBUG
	# assertions).
	if vopen "$L" android-bad && mount -t erofs -o ro /dev/mapper/android-bad /mnt/c; then
		flipped C /mnt/c
		umount /mnt/c
	else
		notok "android flipped: the C driver mounts"
	fi
	veritysetup close android-bad
else
	notok "android flipped: veritysetup open"
fi
losetup -d "$L"
