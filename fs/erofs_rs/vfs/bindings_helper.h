/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The headers of the module's own bindings (vfs/sys.rs): glue.h, and the kernel headers
 * whose functions and types 7.3's kernel::bindings does not carry. bindgen runs over this file
 * at build time (Kbuild) with the kernel's own bindgen flags; vfs/bindgen_parameters chooses
 * what is kept.
 */
#include <crypto/acompress.h>
#include <linux/backing-file.h>
#include <linux/bio.h>
#include <linux/blkdev.h>
#include <linux/crc32.h>
#include <linux/exportfs.h>
#include <linux/fs_context.h>
#include <linux/fs_parser.h>
#include <linux/iomap.h>
#include <linux/lz4.h>
#include <linux/pagemap.h>
#include <linux/statfs.h>
#include <linux/pseudo_fs.h>
#include <linux/slab.h>
#include <linux/vmalloc.h>
#include <linux/xxhash.h>
#include <linux/posix_acl_xattr.h>
#include <linux/xattr.h>
#include <linux/xz.h>
#include <linux/zlib.h>
#include <linux/zstd.h>
#include "../glue.h"
#include <trace/events/erofs_rs.h>

/* Macros bindgen cannot evaluate (they cast), as constants it can. */
static const fgf_t EROFS_RS_FGP_LOCK = FGP_LOCK;
static const fgf_t EROFS_RS_FGP_CREAT = FGP_CREAT;
static const fgf_t EROFS_RS_FGP_NOWAIT = FGP_NOWAIT;
static const gfp_t EROFS_RS_GFP_NOIO = GFP_NOIO;
static const gfp_t EROFS_RS_GFP_NOFS = GFP_NOFS;
static const gfp_t EROFS_RS_GFP_FS = __GFP_FS;
static const fgf_t EROFS_RS_FGP_NOFS = FGP_NOFS;
static const gfp_t EROFS_RS_GFP_NORETRY = __GFP_NORETRY;
static const gfp_t EROFS_RS_GFP_NOWARN = __GFP_NOWARN;
static const gfp_t EROFS_RS_GFP_RECLAIM = __GFP_RECLAIM;
static const fmode_t EROFS_RS_FMODE_CAN_ODIRECT = FMODE_CAN_ODIRECT;
static const blk_mode_t EROFS_RS_BLK_OPEN_READ = BLK_OPEN_READ;
static const loff_t EROFS_RS_MAX_LFS_FILESIZE = MAX_LFS_FILESIZE;
static const slab_flags_t EROFS_RS_SLAB_RECLAIM_ACCOUNT = SLAB_RECLAIM_ACCOUNT;
static const slab_flags_t EROFS_RS_SLAB_ACCOUNT = SLAB_ACCOUNT;
/* Macros bindgen cannot evaluate (BIT()), as constants, as rust/bindings does. */
const unsigned int EROFS_RS_SB_RDONLY = SB_RDONLY;
const unsigned int EROFS_RS_SB_POSIXACL = SB_POSIXACL;
const unsigned int EROFS_RS_SB_NOATIME = SB_NOATIME;
