# SPDX-License-Identifier: GPL-2.0
# Sourced by guest-tests.sh: the xattr name filter, metabox images, source= as a file
# descriptor, and the dax, domain_id and inode_share options, each against the C driver in
# this boot. Uses check/ok/notok, $M, $TESTW and $TREE_TOOL from guest-tests.sh.

FSMOUNT="python3 $(dirname "$0")/fsmount.py"

# The xattr name bloom filter is consulted: with every bit set ("no such name"), getxattr
# answers ENODATA for names that are there, as the C driver does; listxattr still lists them.
img=$TESTW/corrupt/xattr-filter.img
L=$(losetup -r -f --show "$img"); mount -t erofs -o ro "$L" /mnt/c
if [ "$("$TREE_TOOL" mount erofs_rs "$img" /mnt/rs)" = OK ]; then
	check "xattr filter: a name the filter rules out is ENODATA, though present" sh -c '
		getfattr -n user.attr1 /mnt/rs/many 2>&1 | grep -q "No such attribute" &&
		getfattr -m - /mnt/rs/many 2>/dev/null | grep -q "^user.attr1$"'
	check "xattr filter: getfattr -d and the name list equal the C driver's" sh -c "
		for d in c rs; do (cd /mnt/\$d && getfattr -d -m - many; getfattr -m - many; getfattr -n user.attr1 many) >$M/xf.\$d 2>&1; done
		diff $M/xf.c $M/xf.rs"
	umount /mnt/rs
else
	notok "xattr filter: erofs_rs mounts the image"
fi
umount /mnt/c; losetup -d "$L"

# Metabox images: inode numbers as erofs_nid_to_ino64, NFS handles with metabox nids, and
# the C driver's shared-xattr slip. In 7.3, erofs_xattr_iter_shared() switches the metadata
# buffer from the metabox to the device without dropping the page it holds, so when the
# inline xattrs end in a metabox page with the same index as the shared xattr's device page,
# the C driver reads the shared xattr from the wrong page. erofs_rs reads the source tree's
# xattrs (compare_image checks it); here we record how many files the C driver gets wrong.
img=$TESTW/img/xattr-mbox.erofs
if [ -f "$img" ]; then
	L=$(losetup -r -f --show "$img"); mount -t erofs -o ro "$L" /mnt/c
	if [ "$("$TREE_TOOL" mount erofs_rs "$img" /mnt/rs)" = OK ]; then
		"$TREE_TOOL" manifest --fields $SRCF,xattrs /mnt/c >$M/mbc 2>&1
		"$TREE_TOOL" manifest --fields $SRCF,xattrs /mnt/rs >$M/mbrs 2>&1
		check "metabox: every xattr equals the source tree's" diff "$TESTW/manifest/xattr.src" $M/mbrs
		echo "# metabox: the C driver's xattrs differ from the source tree on $(diff "$TESTW/manifest/xattr.src" $M/mbc | grep -c '^>') of $(wc -l <$M/mbc) entries"
		check "metabox: inode numbers past bit 31 as the C driver's (erofs_nid_to_ino64)" sh -c "
			a=\$(stat -c %i /mnt/c/many); b=\$(stat -c %i /mnt/rs/many); [ \"\$a\" = \"\$b\" ] && [ \$a -ge 2147483648 ]"
		umount /mnt/rs
	else
		notok "metabox: erofs_rs mounts xattr-mbox"
	fi
	umount /mnt/c; losetup -d "$L"
fi

# source= as a file descriptor (fsconfig FSCONFIG_SET_FD), as the C driver's
# fsparam_file_or_string.
img=$TESTW/img/xattr-default.erofs
r=$($FSMOUNT erofs_rs "$img" /mnt/rs)
if [ "$r" = OK ]; then
	"$TREE_TOOL" manifest --fields $SRCF,xattrs /mnt/rs >$M/fd 2>&1
	check "source=<fd>: the mount reads like the source tree" diff "$TESTW/manifest/xattr.src" $M/fd
	$FSMOUNT erofs "$img" /mnt/c >/dev/null
	check "source=<fd>: /proc/mounts as the C driver's (source path, options)" sh -c "
		[ \"\$(awk '\$2==\"/mnt/c\" {print \$1, \$4}' /proc/mounts)\" = \"\$(awk '\$2==\"/mnt/rs\" {print \$1, \$4}' /proc/mounts)\" ] || { grep /mnt/ /proc/mounts; exit 1; }"
	umount /mnt/c; umount /mnt/rs
else
	notok "source=<fd>: erofs_rs mounts ($r)"
fi
# Refused sources and option errors: the errno and the fs_context message equal the C
# driver's (with the driver name normalised).
dimg=$TESTW/img/xattr-digest.erofs
for args in "$TESTW/trees/xattr|" "/dev/vda|" "$img|source=/elsewhere" "$img|dax" "$img|dax=never" "$img|dax=always" \
	"$img|dax=bogus" "$img|inode_share" "$img|inode_share domain_id=d1" "$img|domain_id=d1" \
	"$dimg|inode_share domain_id=d1" "$dimg|inode_share dax"; do
	src=${args%%|*} opts=${args#*|}
	# shellcheck disable=SC2086
	a=$($FSMOUNT erofs "$src" /mnt/c $opts | sed 's/erofs_rs/erofs/g')
	[ "$a" = OK ] && a="OK $(awk '$2=="/mnt/c" {print $4}' /proc/mounts)"; umount /mnt/c 2>/dev/null
	# shellcheck disable=SC2086
	b=$($FSMOUNT erofs_rs "$src" /mnt/rs $opts | sed 's/erofs_rs/erofs/g')
	[ "$b" = OK ] && b="OK $(awk '$2=="/mnt/rs" {print $4}' /proc/mounts)"; umount /mnt/rs 2>/dev/null
	if [ "$a" = "$b" ]; then ok "fsconfig ${src##*/} $opts: as the C driver ($b)"; else notok "fsconfig ${src##*/} $opts: C '$a', erofs_rs '$b'"; fi
done
# domain_id= is ignored on remount, with the C driver's message.
if [ "$("$TREE_TOOL" mount erofs_rs "$img" /mnt/rs domain_id=d1)" = OK ]; then
	check "remount with domain_id=: ignored, with a message" sh -c "mount -o remount,ro,domain_id=d2 /mnt/rs && dmesg | tail -n 3 | grep -q 'erofs_rs (device .*): ignoring reconfiguration for domain_id.'"
	umount /mnt/rs
else
	notok "domain_id=: erofs_rs mounts"
fi

# Page-cache sharing (inode_share, domain_id=): files with the same fingerprint in mounts of
# the same domain read through one shared page cache, as in the C driver. After reading a
# file through mount a, mincore on its mmap in mount b (same domain) shows it resident, in
# mount c (another domain) not. Pairs: two uncompressed layouts, two compressed ones, and
# uncompressed with compressed (shared only where the layouts, hence the aops, agree).
ishare_run() { # fstype
	for pair in "xattr-digest ishare-ext" "ishare-z1 ishare-z2" "xattr-digest ishare-z1"; do
		set -- $pair
		"$TREE_TOOL" mount "$drv" "$TESTW/img/$1.erofs" /mnt/a inode_share,domain_id=dom1 >/dev/null
		"$TREE_TOOL" mount "$drv" "$TESTW/img/$2.erofs" /mnt/b inode_share,domain_id=dom1 >/dev/null
		"$TREE_TOOL" mount "$drv" "$TESTW/img/$2.erofs" /mnt/c inode_share,domain_id=dom2 >/dev/null
		echo 3 >/proc/sys/vm/drop_caches
		for f in bash/COMPAT.gz tree/email/_header_value_parser.py; do
			cat "/mnt/a/$f" >/dev/null
			echo "$pair $f: a $(python3 "$RESIDENT" /mnt/a/$f) b $(python3 "$RESIDENT" /mnt/b/$f) c $(python3 "$RESIDENT" /mnt/c/$f)"
			for m in a b c; do cmp "/mnt/$m/$f" "$TESTW/trees/xattr/$f" || echo "$m/$f differs"; done
		done
		dd if=/mnt/b/bash/COMPAT.gz iflag=direct of=/dev/null 2>&1 | grep -o 'Invalid argument'
		awk '$2=="/mnt/a" {print $4}' /proc/mounts
		umount /mnt/a
		cmp /mnt/b/tree/email/_header_value_parser.py "$TESTW/trees/xattr/tree/email/_header_value_parser.py" || echo "b differs after a is gone"
		umount /mnt/b /mnt/c
	done
}
RESIDENT=$(dirname "$0")/resident.py
mkdir -p /mnt/a /mnt/b
drv=erofs ishare_run >$M/ish.c 2>&1
drv=erofs_rs ishare_run >$M/ish.rs 2>&1
check "inode_share: page-cache sharing, bytes, O_DIRECT and options as the C driver's" diff $M/ish.c $M/ish.rs
if grep -q '^xattr-digest ishare-ext tree/email/_header_value_parser.py: a \([1-9][0-9]*\)/\1 b \1/\1 c 0/' $M/ish.rs &&
	grep -q '^ishare-z1 ishare-z2 tree/email/_header_value_parser.py: a \([1-9][0-9]*\)/\1 b \1/\1 c 0/' $M/ish.rs &&
	! grep -q differs $M/ish.rs; then
	ok "inode_share: a file read in one mount is resident in the other of its domain only"
else
	notok "inode_share: a file read in one mount is resident in the other of its domain only"
	sed 's/^/#   /' $M/ish.rs
fi
