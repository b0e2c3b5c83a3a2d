/* SPDX-License-Identifier: GPL-2.0 */
/* See canned_fs_config.h: the capability definitions and Android ids erofs-utils may name. */
#ifndef EROFS_RS_ANDROID_FILESYSTEM_CONFIG_H
#define EROFS_RS_ANDROID_FILESYSTEM_CONFIG_H
/* As Android's header on a glibc host: struct vfs_cap_data for security.capability. */
#include <linux/capability.h>

#define AID_ROOT 0
#define AID_SYSTEM 1000
#define AID_SHELL 2000
#endif
