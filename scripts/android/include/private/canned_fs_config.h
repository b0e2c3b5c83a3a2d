/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The declarations of Android's libcutils (system/core/libcutils) that erofs-utils includes when
 * it is built WITH_ANDROID, for mkfs.erofs --fs-config-file on a Debian host (scripts/setup).
 */
#ifndef EROFS_RS_CANNED_FS_CONFIG_H
#define EROFS_RS_CANNED_FS_CONFIG_H
#include <stdint.h>

int load_canned_fs_config(const char *fn);
void canned_fs_config(const char *path, int dir, const char *target_out_path, unsigned int *uid,
		      unsigned int *gid, unsigned int *mode, uint64_t *capabilities);
#endif
