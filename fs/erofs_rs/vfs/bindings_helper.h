/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The headers of the module's own bindings (vfs/sys.rs): glue.h, and the kernel headers
 * whose functions and types 7.3's kernel::bindings does not carry. bindgen runs over this file
 * at build time (Kbuild) with the kernel's own bindgen flags; vfs/bindgen_parameters chooses
 * what is kept.
 */
#include <crypto/acompress.h>
#include <linux/lz4.h>
#include <linux/vmalloc.h>
#include <linux/xz.h>
#include <linux/zlib.h>
#include <linux/zstd.h>
#include "../glue.h"
