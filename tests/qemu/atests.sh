# SPDX-License-Identifier: GPL-2.0
# The crypto-API offload of DEFLATE pclusters (decomp_accel=, /sys/fs/erofs_rs/accel): the
# kernel's own software deflate driver, then the fault-injecting test driver of tests/accel.
# Sourced by guest-tests.sh (uses check/ok/notok, $M, $TESTW, $TREE_TOOL, $ZDATA from
# ztests.sh).

ZS=/sys/kernel/debug/erofs_rs
acc() { awk -v k="$2" '$1 == k { print $2 }' "$ZS/$1/accel" 2>/dev/null || echo 0; }
img2k=$(awk '$1 == "zedge" && $2 == "deflate2k" { print $3 }' $M/zlist)
img32k=$(awk '$1 == "zedge" && $2 == "deflate" { print $3 }' $M/zlist)
if [ -z "$img2k" ] || [ -z "$img32k" ]; then
	notok "offload: the zedge deflate and deflate2k images are in the list"
else
	# 1. The kernel's deflate-generic (2 KiB windows) on an image made with 2 KiB windows.
	L=$(losetup -r -f --show "$img2k"); d=${L#/dev/}
	r=$("$TREE_TOOL" mount erofs_rs "$L" /mnt/rs decomp_accel=deflate)
	if [ "$r" = OK ]; then
		"$TREE_TOOL" manifest --fields type,size,data /mnt/rs >$M/a1 2>&1
		check "decomp_accel=deflate (deflate-generic, 2 KiB windows): every byte equals the source" diff "$ZDATA" $M/a1
		check "decomp_accel=deflate: pclusters went through the engine, none failed ($(acc $d offloaded) offloaded)" \
			sh -c "grep -q '^driver deflate-generic' $ZS/$d/accel && [ $(acc $d offloaded) -gt 0 ] && [ $(acc $d errors) -eq 0 ]"
		check "decomp_accel shows in /proc/mounts" grep -q "^$L /mnt/rs erofs_rs .*,decomp_accel=deflate,decomp_accel_min=0 " /proc/mounts
		umount /mnt/rs
	else
		notok "decomp_accel=deflate mounts ($r)"
	fi
	r=$("$TREE_TOOL" mount erofs_rs "$L" /mnt/rs decomp_accel=deflate,decomp_accel_min=1048576)
	if [ "$r" = OK ]; then
		"$TREE_TOOL" manifest --fields type,size,data /mnt/rs >$M/a1 2>&1
		check "decomp_accel_min=1048576: nothing offloaded, every byte right" sh -c \
			"diff -q $ZDATA $M/a1 && [ $(acc $d offloaded) -eq 0 ]"
		umount /mnt/rs
	fi
	losetup -d "$L"
	# 2. deflate-generic cannot serve 32 KiB windows: refused at mount, software decodes.
	L=$(losetup -r -f --show "$img32k"); d=${L#/dev/}
	dmark
	r=$("$TREE_TOOL" mount erofs_rs "$L" /mnt/rs decomp_accel=deflate)
	if [ "$r" = OK ]; then
		"$TREE_TOOL" manifest --fields type,size,data /mnt/rs >$M/a2 2>&1
		check "decomp_accel=deflate on 32 KiB windows: refused with a message, software decodes every byte right" \
			sh -c "dmesg | tail -n +$DMARK | grep -q 'inflates with 2 KiB windows' && diff -q $ZDATA $M/a2 && [ ! -e $ZS/$d/accel ]"
		umount /mnt/rs
	else
		notok "decomp_accel=deflate on a 32 KiB-window image mounts ($r)"
	fi
	# 3. A missing driver: the mount works in software.
	dmark
	r=$("$TREE_TOOL" mount erofs_rs "$L" /mnt/rs decomp_accel=no_such_driver)
	if [ "$r" = OK ]; then
		"$TREE_TOOL" manifest --fields type,size,data /mnt/rs >$M/a3 2>&1
		check "decomp_accel=no_such_driver: a warning, and software decodes every byte right" \
			sh -c "dmesg | tail -n +$DMARK | grep -q 'acomp driver no_such_driver unavailable' && diff -q $ZDATA $M/a3"
		umount /mnt/rs
	else
		notok "decomp_accel=no_such_driver mounts ($r)"
	fi
	losetup -d "$L"
	# 4. The global switch, as the C driver's /sys/fs/erofs/accel.
	L=$(losetup -r -f --show "$img2k"); d=${L#/dev/}
	echo deflate >/sys/fs/erofs_rs/accel
	if [ "$("$TREE_TOOL" mount erofs_rs "$L" /mnt/rs)" = OK ]; then
		cat /mnt/rs/big/text6m >/dev/null
		check "/sys/fs/erofs_rs/accel=deflate applies to mounts without the option" sh -c \
			"grep -q 'decomp_accel=deflate' /proc/mounts && [ $(acc $d offloaded) -gt 0 ]"
		umount /mnt/rs
	fi
	echo >/sys/fs/erofs_rs/accel
	check "echo > /sys/fs/erofs_rs/accel disables it" sh -c "[ -z \"\$(cat /sys/fs/erofs_rs/accel)\" ]"
	losetup -d "$L"

	# 5. The fault-injecting driver (tests/accel): failures and short outputs fall back to
	# software with the right bytes; slow completions do not hold up other readers; unmount
	# with requests in flight loses and leaks nothing.
	P=/sys/module/erofs_rs_test_acomp/parameters
	if modprobe erofs_rs_test_acomp; then
		L=$(losetup -r -f --show "$img32k"); d=${L#/dev/}
		for fault in none fail_every=3 corrupt_every=4; do
			echo 0 >$P/fail_every; echo 0 >$P/corrupt_every
			[ $fault = none ] || echo "${fault#*=}" >$P/${fault%=*}
			r=$("$TREE_TOOL" mount erofs_rs "$L" /mnt/rs decomp_accel=erofs_rs_test_deflate)
			[ "$r" = OK ] || { notok "decomp_accel=erofs_rs_test_deflate mounts ($r)"; continue; }
			echo 3 >/proc/sys/vm/drop_caches
			"$TREE_TOOL" manifest --fields type,size,data /mnt/rs >$M/a5 2>&1
			if [ $fault = none ]; then
				check "test driver: every byte right, all offloaded ($(acc $d offloaded)), no errors" sh -c \
					"diff -q $ZDATA $M/a5 && [ $(acc $d offloaded) -gt 0 ] && [ $(acc $d errors) -eq 0 ] && [ $(acc $d fallback) -eq 0 ]"
			else
				check "test driver, $fault: every byte right, $(acc $d errors) failed requests decoded in software" sh -c \
					"diff -q $ZDATA $M/a5 && [ $(acc $d errors) -gt 0 ] && [ $(acc $d fallback) -ge $(acc $d errors) ]"
			fi
			umount /mnt/rs
		done
		echo 0 >$P/fail_every; echo 0 >$P/corrupt_every
		# Slow engine: 300 ms per request. A reader of a software mount is not held up.
		echo 300 >$P/delay_ms
		L2=$(losetup -r -f --show "$(awk '$1 == "zedge" && $2 == "lz4" { print $3 }' $M/zlist)")
		mkdir -p /mnt/rs2
		if [ "$("$TREE_TOOL" mount erofs_rs "$L" /mnt/rs decomp_accel=erofs_rs_test_deflate)" = OK ] &&
			[ "$("$TREE_TOOL" mount erofs_rs "$L2" /mnt/rs2)" = OK ]; then
			echo 3 >/proc/sys/vm/drop_caches
			(md5sum /mnt/rs/big/text6m /mnt/rs/dup/copy1 >$M/a6 2>&1; touch $M/a6.done) &
			slow=$!
			sleep 0.5
			md5sum /mnt/rs2/text/t1048576 >$M/a7 2>&1
			check "a slow engine (300 ms/request) does not hold up another mount's reader" sh -c \
				"kill -0 $slow 2>/dev/null && [ ! -e $M/a6.done ] && [ -s $M/a7 ]"
			wait $slow
			check "slow engine: the bytes are right" sh -c "
				[ \"\$(md5sum <$TESTW/trees/zedge/big/text6m)\" = \"\$(md5sum </mnt/rs/big/text6m)\" ] &&
				grep -q \$(md5sum <$TESTW/trees/zedge/big/text6m | cut -d' ' -f1) $M/a6"
			# Unmount with requests in flight: the reader is killed, the unmount waits for the
			# engine, nothing is left behind.
			echo 2000 >$P/delay_ms
			echo 3 >/proc/sys/vm/drop_caches
			dd if=/mnt/rs/dup/copy2 of=/dev/null bs=1M 2>/dev/null &
			rd=$!
			sleep 1
			inflight=$(cat $P/in_flight)
			kill -9 $rd; wait $rd 2>/dev/null
			umount /mnt/rs2
			check "unmount with $inflight offload requests in flight completes" sh -c "[ $inflight -gt 0 ] && umount /mnt/rs"
			check "after unmount: no request in flight, the test driver unloads (no reference leaked)" sh -c \
				"[ \$(cat $P/in_flight) -eq 0 ] && rmmod erofs_rs_test_acomp"
		else
			notok "slow engine: mounts"
			umount /mnt/rs 2>/dev/null; umount /mnt/rs2 2>/dev/null
			rmmod erofs_rs_test_acomp
		fi
		losetup -d "$L2"; losetup -d "$L"
	else
		notok "modprobe erofs_rs_test_acomp (tests/accel)"
	fi
fi
