# SPDX-License-Identifier: GPL-2.0
# erofs as the read-only layers of an overlay, as containerd and composefs mount it, and a plain
# read-write `mount -o loop` of an image, as a distribution kernel allows (the guest kernel has
# CONFIG_BLK_DEV_WRITE_MOUNTED and CONFIG_OVERLAY_FS). The lower layer is the zedge lz4hc64k
# image; ovl-top.erofs (tests/run) is a layer above it with a whiteout, an opaque directory, a
# replaced file and a new one; the upper layer is tmpfs. The merged view must equal
# $TESTW/manifest/ovl.src and the same overlay over the C driver's mounts; copy-up of a
# compressed file must keep every byte. Sourced by guest-tests.sh (check/ok/notok, $M, $TESTW,
# $TREE_TOOL).

OVZ=$(awk '$1 == "zedge" && $2 == "lz4hc64k" { print $3 }' "$TESTW/list")
OVT=$TESTW/img/ovl-top.erofs
OVF=type,mode,size,data
OV=/run/ovl

# ovl_mount DRIVER: the two layers mounted by DRIVER from read-only loop devices, and the
# overlay over them at $OV/m with a fresh tmpfs upper layer. Prints what failed, if anything.
ovl_mount() {
	mkdir -p $OV && mount -t tmpfs tmpfs $OV && mkdir -p $OV/lo $OV/top $OV/m $OV/u/up $OV/u/work || return 1
	lz=$(losetup -r -f --show "$OVZ") && r=$("$TREE_TOOL" mount "$1" "$lz" $OV/lo) && [ "$r" = OK ] ||
		{ echo "lower: $r"; return 1; }
	lt=$(losetup -r -f --show "$OVT") && r=$("$TREE_TOOL" mount "$1" "$lt" $OV/top) && [ "$r" = OK ] ||
		{ echo "top layer: $r"; return 1; }
	mount -t overlay overlay -o lowerdir=$OV/top:$OV/lo,upperdir=$OV/u/up,workdir=$OV/u/work $OV/m
}
ovl_umount() {
	umount $OV/m 2>/dev/null
	umount -d $OV/top 2>/dev/null
	umount -d $OV/lo 2>/dev/null
	umount $OV 2>/dev/null
}

for drv in erofs_rs erofs; do
	if [ "$drv" = erofs ] && [ "$SUITE" = debug ]; then continue; fi
	if out=$(ovl_mount $drv 2>&1); then
		"$TREE_TOOL" manifest --fields $OVF $OV/m >$M/ovl.$drv 2>&1
		check "overlay on $drv layers: whiteout, opaque directory, replaced and new files as the layers say" \
			diff "$TESTW/manifest/ovl.src" $M/ovl.$drv
		check "overlay on $drv layers: the whiteout and the opaque directory's lower entries are hidden" sh -c \
			"[ ! -e $OV/m/mixed/m100 ] && [ \"\$(ls $OV/m/dup)\" = new ] && [ -c $OV/top/mixed/m100 ] &&
			 [ \"\$(getfattr --only-values -n trusted.overlay.opaque $OV/top/dup)\" = y ]"
		if [ "$drv" = erofs_rs ]; then
			# Copy-up of a compressed file: appending copies all of it to the upper layer.
			f=big/text6m
			check "overlay on erofs_rs: copy-up of a compressed file keeps every byte, the lower file is unchanged" sh -c "
				echo appended >>$OV/m/$f &&
				[ \$(stat -c %s $OV/u/up/$f) = \$((\$(stat -c %s $TESTW/trees/zedge/$f) + 9)) ] &&
				cmp -n \$(stat -c %s $TESTW/trees/zedge/$f) $OV/u/up/$f $TESTW/trees/zedge/$f &&
				[ \"\$(tail -c 9 $OV/m/$f)\" = appended ] && cmp $OV/lo/$f $TESTW/trees/zedge/$f"
			# A metadata-only copy-up and a removal in the merged view (a new whiteout upstairs).
			check "overlay on erofs_rs: chmod copies up, rm leaves a whiteout in the upper layer" sh -c "
				chmod 600 $OV/m/mixed/m4096 && [ \$(stat -c %a $OV/u/up/mixed/m4096) = 600 ] &&
				cmp $OV/m/mixed/m4096 $TESTW/trees/zedge/mixed/m4096 &&
				rm $OV/m/mixed/m1 && [ ! -e $OV/m/mixed/m1 ] && [ -c $OV/u/up/mixed/m1 ] && [ -f $OV/lo/mixed/m1 ]"
		fi
	else
		notok "overlay on $drv layers mounts ($(echo "$out" | tail -n 1))"
	fi
	ovl_umount
done
[ "$SUITE" = debug ] || check "overlay: erofs_rs layers show what the C driver's show" diff $M/ovl.erofs $M/ovl.erofs_rs

# `mount -o loop` without ro of an image in a writable directory: util-linux sets the loop
# device up read-write, which needs CONFIG_BLK_DEV_WRITE_MOUNTED (EBUSY without it).
for drv in erofs_rs erofs; do
	if [ "$drv" = erofs ] && [ "$SUITE" = debug ]; then continue; fi
	cp "$TESTW/img/xattr-default.erofs" /run/tmp/loop.erofs
	if mount -t $drv -o loop /run/tmp/loop.erofs /mnt/rs 2>$M/loop.err; then
		"$TREE_TOOL" manifest --fields $SRCF,xattrs /mnt/rs >$M/loop 2>&1
		check "mount -t $drv -o loop (read-write loop device) equals the source tree" diff "$TESTW/manifest/xattr.src" $M/loop
		umount /mnt/rs
	else
		notok "mount -t $drv -o loop of an image in a writable directory ($(cat $M/loop.err))"
	fi
	rm -f /run/tmp/loop.erofs
done
