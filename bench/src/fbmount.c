// SPDX-License-Identifier: GPL-2.0
/*
 * Mounts a filesystem read-only with mount(2) itself: fbmount SOURCE TARGET FSTYPE [OPTIONS].
 *
 * mount(8) sets up a loop device for a regular file whose filesystem type libblkid knows
 * ("erofs"), but not for one it does not ("erofs_rs"): a file-backed mount of the C driver
 * (fs/erofs/fileio.c) needs the file path handed to the kernel as it is, which this does.
 */
#include <stdio.h>
#include <string.h>
#include <errno.h>
#include <sys/mount.h>

int main(int argc, char **argv)
{
	if (argc < 4 || argc > 5) {
		fprintf(stderr, "usage: fbmount SOURCE TARGET FSTYPE [OPTIONS]\n");
		return 2;
	}
	if (mount(argv[1], argv[2], argv[3], MS_RDONLY, argc == 5 ? argv[4] : NULL)) {
		fprintf(stderr, "fbmount: %s on %s (%s): %s\n", argv[1], argv[2], argv[3],
			strerror(errno));
		return 1;
	}
	return 0;
}
