/* SPDX-License-Identifier: GPL-2.0 */
/* See canned_fs_config.h: libcutils' built-in fs_config, for --mount-point without a file. */
#ifndef EROFS_RS_FS_CONFIG_H
#define EROFS_RS_FS_CONFIG_H
#include <stdint.h>

void fs_config(const char *path, int dir, const char *target_out_path, unsigned int *uid,
	       unsigned int *gid, unsigned int *mode, uint64_t *capabilities);
#endif
