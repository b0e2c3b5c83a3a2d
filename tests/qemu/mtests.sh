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
		"$TREE_TOOL" manifest --fields type,xattrs /mnt/c >$M/mbc 2>&1
		"$TREE_TOOL" manifest --fields type,xattrs /mnt/rs >$M/mbrs 2>&1
		"$TREE_TOOL" manifest --fields type,xattrs "$TESTW/trees/xattr" >$M/mbsrc 2>&1
		check "metabox: every xattr equals the source tree's" diff $M/mbsrc $M/mbrs
		echo "# metabox: the C driver's xattrs differ from the source tree on $(diff $M/mbsrc $M/mbc | grep -c '^>') of $(wc -l <$M/mbsrc) entries"
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
for args in "$TESTW/trees/xattr" "/dev/vda" "$img source=/elsewhere" "$img dax" "$img dax=never" "$img dax=always" \
	"$img dax=bogus" "$img inode_share" "$img inode_share domain_id=d1" "$img domain_id=d1"; do
	# shellcheck disable=SC2086
	a=$($FSMOUNT erofs $args /mnt/c | sed 's/erofs_rs/erofs/g'); umount /mnt/c 2>/dev/null
	# shellcheck disable=SC2086
	b=$($FSMOUNT erofs_rs $args /mnt/rs | sed 's/erofs_rs/erofs/g')
	[ "$b" = OK ] && b="OK $(awk '$2=="/mnt/rs" {print $4}' /proc/mounts)"; umount /mnt/rs 2>/dev/null
	[ "$a" = OK ] && { $FSMOUNT erofs $args /mnt/c >/dev/null; a="OK $(awk '$2=="/mnt/c" {print $4}' /proc/mounts)"; umount /mnt/c; }
	if [ "$a" = "$b" ]; then ok "fsconfig ${args#"$img"}: as the C driver ($b)"; else notok "fsconfig ${args#"$img"}: C '$a', erofs_rs '$b'"; fi
done
# domain_id= is ignored on remount, with the C driver's message.
if [ "$("$TREE_TOOL" mount erofs_rs "$img" /mnt/rs domain_id=d1)" = OK ]; then
	check "remount with domain_id=: ignored, with a message" sh -c "mount -o remount,ro,domain_id=d2 /mnt/rs && dmesg | tail -n 3 | grep -q 'erofs_rs (device .*): ignoring reconfiguration for domain_id.'"
	umount /mnt/rs
else
	notok "domain_id=: erofs_rs mounts"
fi
