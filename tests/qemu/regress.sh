# SPDX-License-Identifier: GPL-2.0
# Sourced by guest-tests.sh (it defines ok, notok, dmark and SUITE): the regression images of
# tests/mkregress, one per bug class (overlapped big pclusters, bad NONHEAD lclusters,
# misclassified plain extents, dedupe cycles, dirent nameoff, negative and huge i_size,
# fragments over lclusters, the tree's own fixed bugs). Each is mounted by erofs_rs and by the
# C driver, each on its own loop device, and its path read whole by `erofs-tree probe`
# (read(2), mmap, readdir; it prints the kernel log lines of the mount as well). Checked: the mount's errno; the read's errno is the expected one
# (the C driver's, which Linux 7.3 has fixed), with a dmesg line naming the nid when it is
# EUCLEAN; erofs_rs's whole result (or its errnos) equals the C driver's where rexpect says
# so; umount works and nothing is left mounted. vm-run fails the guest on any kernel report.
# The C driver runs on the normal kernel only: on the debug one it has EROFS_FS_DEBUG, whose
# DBG_BUGON()s are BUG()s on exactly these images; there the expected errnos (the C driver's,
# as the normal kernel checks) still hold for erofs_rs.

R=$TESTW/regress
# The first errno among stat=, list=, open= and read= of a probe line, or OK (in the shell:
# a process per call costs tens of ms in the guest, 60 of them a second).
rerr() {
	for f in $1; do
		case $f in
		mmap=* | *=OK*) ;;
		*=*) f=${f#*=}; echo "${f%%@*}"; return ;;
		esac
	done
	echo OK
}
nreg=0
treg=$(cut -d' ' -f1 /proc/uptime)
# (`erofs-tree probe --mount` attaches, mounts, reads, unmounts and detaches in one process,
# and prints the kernel's log lines of all that after its result line: on the debug kernel,
# each process costs half a second.)
nl='
'
while read -r name path nid mount want cmp; do
	nreg=$((nreg + 1))
	img=$R/$name.img
	out=$("$TREE_TOOL" probe --mount erofs_rs "$img" /mnt/rs "$path" 2>&1)
	rs=${out%%"$nl"*}
	rsd=${out#"$rs"}
	echo "# regress $name: erofs_rs: $rs"
	case $rs in
	*umount=*) notok "regress $name: umount erofs_rs ($rs)"; continue ;;
	mount=* | stat=*) ;;
	*) notok "regress $name: erofs-tree probe failed: $out"; continue ;;
	esac
	got=$(rerr "$rs")
	case $rs in mount=*) got=${rs#mount=ERR } ;; esac
	# A line of erofs_rs naming the nid (not a longer one).
	named=0
	while IFS= read -r l; do
		case $l in
		*"erofs_rs (device "*"): "*"nid $nid" | *"erofs_rs (device "*"): "*"nid $nid"[!0-9]*) named=1 ;;
		esac
	done <<-EOF
	$rsd
	EOF
	if [ "$mount" != any ] && [ "$mount" != OK ] && [ "$got" != "$mount" ]; then
		notok "regress $name: erofs_rs's mount fails with $mount (got $rs)"
	elif [ "$mount" = OK ] && [ "${rs#mount=}" != "$rs" ]; then
		notok "regress $name: erofs_rs mounts it ($rs)"
	elif [ "$want" = any ]; then
		ok "regress $name: erofs_rs reads $path without a crash"
	elif [ "$want" = OK ]; then
		[ "$got" = OK ] && ok "regress $name: erofs_rs reads $path" || notok "regress $name: erofs_rs reads $path ($rs)"
	elif [ "$got" != "$want" ]; then
		notok "regress $name: erofs_rs fails reading $path with $want (got $rs)"
	elif [ "$want" = EUCLEAN ] && [ $named = 0 ]; then
		notok "regress $name: EUCLEAN, but no dmesg line names nid $nid"
		echo "$rsd" | head -n 8 | sed 's/^/#   /'
	else
		ok "regress $name: erofs_rs fails reading $path with $want, dmesg names nid $nid"
	fi
	[ "$SUITE" = debug ] && continue
	# (H: Linux 7.3's C driver deadlocks on this image; it is not run.)
	[ "$cmp" = H ] && continue
	# The C driver: the same errno where one is expected, and the same whole result where
	# rexpect says C.
	out=$("$TREE_TOOL" probe --mount erofs "$img" /mnt/c "$path" 2>&1)
	c=${out%%"$nl"*}
	echo "# regress $name: C:        $c"
	case $c in
	*umount=*) notok "regress $name: umount the C driver ($c)"; continue ;;
	mount=* | stat=*) ;;
	*) notok "regress $name: erofs-tree probe failed on the C driver: $out"; continue ;;
	esac
	cgot=$(rerr "$c")
	case $c in mount=*) cgot=${c#mount=ERR } ;; esac
	if [ "$want" != any ] && [ "$cgot" != "$want" ]; then
		notok "regress $name: the C driver gives $want (got $c): rexpect is wrong"
	fi
	# (E: the errnos and signals only, without hashes, byte counts and offsets.)
	if [ "$cmp" = E ]; then
		rs=$(echo "$rs" | sed -E 's/=OK:[0-9a-f:]+/=OK/g; s/@[0-9]+//g')
		c=$(echo "$c" | sed -E 's/=OK:[0-9a-f:]+/=OK/g; s/@[0-9]+//g')
	fi
	if [ "$cmp" = C ] || [ "$cmp" = E ]; then
		if [ "$rs" = "$c" ]; then
			ok "regress $name: erofs_rs's result equals the C driver's"
		else
			notok "regress $name: erofs_rs's result equals the C driver's"
			echo "$rsd" | grep -v '^$' | head -n 8 | sed 's/^kmsg:/#   erofs_rs:/'
			echo "${out#"$c"}" | grep -v '^$' | head -n 8 | sed 's/^kmsg:/#   C:/'
		fi
	fi
done <"$R/rexpect"
echo "# regress: $nreg images in $(awk -v t="$treg" '{ printf "%.1f", $1 - t }' /proc/uptime) s"
check "regress: $nreg images, nothing left mounted or attached" sh -c \
	"! grep -qE ' /mnt/(rs|c) ' /proc/mounts && ! losetup -a | grep -q '$R/'"
