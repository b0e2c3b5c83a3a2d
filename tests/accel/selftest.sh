#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# Self-test of erofs_rs_test_acomp.ko, run as root in a guest:
#
#   make -C $KDIR M=$PWD/tests/accel modules
#   scripts/vm-run -- tests/accel/selftest.sh
#
# Loads the driver and its test client (erofs_rs_test_acomp_check.ko) from this directory, drives
# every case through the client's "run" parameter, and removes both, including once while requests
# are pending.
set -eu

D=$(cd "$(dirname "$0")" && pwd)
P=/sys/module/erofs_rs_test_acomp/parameters
C=/sys/module/erofs_rs_test_acomp_check/parameters
N=65536		# the client's uncompressed length
ok=0

fail() { echo "selftest: FAIL: $*" >&2; exit 1; }
p() { cat "$P/$1"; }
c() { cat "$C/$1"; }
setp() { echo "$2" > "$P/$1"; }

# run CASE: one request through the client.
run() { echo "$1" > "$C/run" || fail "$1: the client refused the case"; }

# expect CASE RET ERR DLEN MATCH TOUCHED: run CASE and compare the outcome (- skips a field).
# RET is what crypto_acomp_decompress() returned; = means ERR when synchronous, -EINPROGRESS when
# asynchronous.
expect() {
	cs=$1
	if [ "$2" = = ]; then
		if [ "$(p delay_ms)" = 0 ]; then r=$3; else r=-115; fi
		shift 2
		set -- "$cs" "$r" "$@"
	fi
	run "$cs"
	got="$(c last_ret) $(c last_err) $(c last_dlen) $(c last_match) $(c last_touched)"
	set -- "$2" "$3" "$4" "$5" "$6"
	for g in $got; do
		[ "$1" = - ] || [ "$1" = "$g" ] ||
			fail "$cs (delay_ms=$(p delay_ms)): got ret/err/dlen/match/touched $got"
		shift
	done
	ok=$((ok + 1))
}

# counter NAME DELTA COMMAND...: COMMAND must change the driver's counter NAME by DELTA.
counter() {
	name=$1 delta=$2
	shift 2
	before=$(p "$name")
	"$@"
	after=$(p "$name")
	[ $((after - before)) = "$delta" ] ||
		fail "$*: $name went $before -> $after, expected +$delta"
}

# With fail_every=2: every second request fails, without writing the destination.
fail_every_2() {
	expect sg = 0 $N 1 1
	expect sg = -5 - - 0
	expect nondma = 0 $N 1 1
	expect nondma = -5 - - 0
}

dmesg_before=$(dmesg | wc -l)

insmod "$D/erofs_rs_test_acomp.ko"
entry=$(awk 'BEGIN { RS = "" } /\ndriver *: erofs_rs_test_deflate\n/' /proc/crypto)
echo "$entry"
echo "$entry" | grep -qx 'name *: deflate' || fail "/proc/crypto: no name deflate"
echo "$entry" | grep -qx 'type *: acomp' || fail "/proc/crypto: no type acomp"
echo "$entry" | grep -qx 'module *: erofs_rs_test_acomp' || fail "/proc/crypto: wrong module"
for f in fail_every corrupt_every delay_ms requests failed completed_async in_flight; do
	[ "$(p $f)" = 0 ] || fail "$f is $(p $f) after load"
done
# Counters are read-only; knobs read back what was written.
! (echo 1 > $P/requests) 2>/dev/null || fail "requests is writable"
setp delay_ms 7
[ "$(p delay_ms)" = 7 ] || fail "delay_ms reads $(p delay_ms)"
setp delay_ms 0

insmod "$D/erofs_rs_test_acomp_check.ko"
echo "compressed test stream: $(c chk_clen) bytes for $N"

run lookup
echo "\"deflate\" lookups pick this driver: mask 0: $(c last_match), mask ASYNC: $(c last_touched)"

for delay in 0 150; do
	setp delay_ms $delay
	echo "--- delay_ms=$delay"

	counter requests 1 expect sg = 0 $N 1 1
	expect big = 0 $N 1 1
	expect virt = 0 $N 1 1
	# A non-DMA virtual request must reach this driver (not the API's software fallback).
	counter requests 1 expect nondma = 0 $N 1 1
	expect comp = 0 $N 1 1
	counter failed 1 expect nospc = -28 - - 0
	expect bad = -22 - - 0
	expect trunc = -22 - - 0
	# The API refuses on-stack requests for an async tfm before the driver sees them.
	counter requests 0 expect onstack -11 -11 - - 0

	setp fail_every 2
	counter injected_fail 2 fail_every_2
	setp fail_every 0

	setp corrupt_every 3
	expect sg = 0 $N 1 1
	expect sg = 0 $N 1 1
	counter injected_short 1 expect sg = 0 $((N - 1)) 1 1
	setp corrupt_every 0

	# -EIO wins when both fire.
	setp fail_every 1
	setp corrupt_every 1
	expect sg = -5 - - 0
	setp fail_every 0
	setp corrupt_every 0

	if [ $delay != 0 ]; then
		[ "$(c last_ms)" -ge $delay ] || fail "async request took $(c last_ms) ms"
		counter completed_async 1 expect sg = 0 $N 1 1
	else
		counter completed_async 0 expect sg = 0 $N 1 1
	fi

	# 32 concurrent requests; with a delay they overlap rather than queue.
	run burst
	[ "$(c burst_failed) $(c burst_bad)" = "0 0" ] ||
		fail "burst: $(c burst_failed) failed, $(c burst_bad) bad"
	echo "burst of 32: $(c last_ms) ms"
	[ $delay = 0 ] || [ "$(c last_ms)" -lt $((delay * 8)) ] || fail "burst was serialized"
	setp fail_every 4
	run burst
	[ "$(c burst_failed) $(c burst_bad) $(c last_err)" = "8 0 -5" ] ||
		fail "burst with fail_every=4: $(c burst_failed) failed, $(c burst_bad) bad"
	setp fail_every 0
	[ "$(p in_flight)" = 0 ] || fail "in_flight $(p in_flight) when idle"
	ok=$((ok + 2))
done

echo "counters: requests $(p requests) failed $(p failed) completed_async $(p completed_async)" \
	"injected_fail $(p injected_fail) injected_short $(p injected_short)"

# Unload with requests pending (their tfm already freed): rmmod must finish them now, normally.
setp delay_ms 60000
run orphan
[ "$(p in_flight)" = 4 ] || fail "orphan: in_flight $(p in_flight)"
[ "$(c orphans_done)" = 0 ] || fail "orphans completed early"
start=$(date +%s)
rmmod erofs_rs_test_acomp
[ $(($(date +%s) - start)) -lt 10 ] || fail "rmmod waited for the delay"
[ "$(c orphans_done) $(c orphans_pending) $(c orphans_err)" = "4 0 0" ] ||
	fail "orphans: done $(c orphans_done) pending $(c orphans_pending) err $(c orphans_err)"
echo "rmmod with 4 pending requests took $(($(date +%s) - start)) s; all completed"

# Load parameters, and a plain unload after async use.
insmod "$D/erofs_rs_test_acomp.ko" delay_ms=20 fail_every=1
expect sg = -5 - - 0
setp fail_every 0
expect sg = 0 $N 1 1
rmmod erofs_rs_test_acomp
rmmod erofs_rs_test_acomp_check
! grep -q erofs_rs_test_deflate /proc/crypto || fail "still in /proc/crypto"

if dmesg | tail -n +$((dmesg_before + 1)) | grep -E 'BUG|WARNING|Oops|KASAN|leak|hung'; then
	fail "dmesg"
fi
echo "selftest: PASS ($ok checks)"
