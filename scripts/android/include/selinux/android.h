/* SPDX-License-Identifier: GPL-2.0 */
/* See ../private/canned_fs_config.h: erofs-utils needs nothing from Android's libselinux. */
#include <selinux/selinux.h>
