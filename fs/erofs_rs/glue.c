// SPDX-License-Identifier: GPL-2.0-only
/*
 * erofs_rs glue: the `fstype` module parameter, and plain-function wrappers of static inline
 * kernel helpers and macros that Rust cannot call through bindings. The operation tables are
 * Rust's (vfs/tables.rs and the abstractions beside it).
 */
#include <linux/blkdev.h>
#include <linux/fs.h>
#include <linux/module.h>
#include <linux/pagemap.h>
#include <linux/security.h>
#include "glue.h"

/* The `fstype` parameter stays here: 7.3's Rust module! has no string (charp) parameters. */
static char *fstype = "erofs";
module_param(fstype, charp, 0444);
MODULE_PARM_DESC(fstype, "name to register the filesystem type under (default: erofs)");

/* The name to register the filesystem type under (vfs/mod.rs). */
const char *erofs_rs_glue_fstype(void)
{
	return fstype;
}

/* Inodes live in Rust's container and cache (vfs/inode_cache.rs). */
struct inode *erofs_rs_glue_alloc_inode_sb(struct super_block *sb, struct kmem_cache *cache,
					   gfp_t gfp)
{
	return alloc_inode_sb(sb, cache, gfp);
}

bool erofs_rs_glue_inode_is_new(struct inode *inode)
{
	return inode_state_read_once(inode) & I_NEW;
}

bool erofs_rs_glue_mapping_large_folio_support(struct address_space *mapping)
{
	return mapping_large_folio_support(mapping);
}

void erofs_rs_glue_mapping_set_large_folios(struct address_space *mapping)
{
	mapping_set_large_folios(mapping);
}

void erofs_rs_glue_list_del(struct list_head *entry)
{
	list_del(entry);
}

const struct cred *erofs_rs_glue_current_cred(void)
{
	return current_cred();
}

void erofs_rs_glue_kiocb_clone(struct kiocb *kiocb, struct kiocb *src, struct file *filp)
{
	kiocb_clone(kiocb, src, filp);
}

int erofs_rs_glue_security_mmap_backing_file(struct vm_area_struct *vma, struct file *backing,
					     struct file *user)
{
	return security_mmap_backing_file(vma, backing, user);
}

unsigned int erofs_rs_glue_bdev_dma_alignment(struct block_device *bdev)
{
	return bdev_dma_alignment(bdev);
}

unsigned int erofs_rs_glue_bdev_logical_block_size(struct block_device *bdev)
{
	return bdev_logical_block_size(bdev);
}

/* One-line wrappers of static inline functions and macros, for vfs/super_block.rs and vfs/mod.rs. */

loff_t erofs_rs_glue_i_size_read(const struct inode *inode)
{
	return i_size_read(inode);
}

void erofs_rs_glue_init_sync_kiocb(struct kiocb *kiocb, struct file *file)
{
	init_sync_kiocb(kiocb, file);
}

const struct cred *erofs_rs_glue_override_creds(const struct cred *cred)
{
	return override_creds(cred);
}

void erofs_rs_glue_revert_creds(const struct cred *old)
{
	revert_creds(old);
}

void erofs_rs_glue_i_uid_write(struct inode *inode, uid_t uid)
{
	i_uid_write(inode, uid);
}

void erofs_rs_glue_i_gid_write(struct inode *inode, gid_t gid)
{
	i_gid_write(inode, gid);
}

bool erofs_rs_glue_dir_emit(struct dir_context *ctx, const u8 *name, u32 len, u64 ino, u8 ftype)
{
	return dir_emit(ctx, name, len, ino, fs_ftype_to_dtype(ftype));
}

bool erofs_rs_glue_fatal_signal_pending(void)
{
	return fatal_signal_pending(current);
}

void erofs_rs_glue_cond_resched(void)
{
	cond_resched();
}

u64 erofs_rs_glue_folio_pos(struct folio *folio)
{
	return folio_pos(folio);
}

size_t erofs_rs_glue_folio_size(struct folio *folio)
{
	return folio_size(folio);
}

/*
 * Copies a page's worth of bytes with memcpy() as the kernel's C code gets it: GCC expands a
 * constant-size copy inline (`rep movsq`, as in _copy_to_iter()); clang calls memcpy. Where
 * copy_page() is copy_page_regs() on CPUs without REP_GOOD, and a call from Rust reaches the
 * out-of-line __memcpy (`rep movsb` on CPUs with FSRM).
 */
void erofs_rs_glue_memcpy_page(void *to, const void *from)
{
	memcpy(to, from, PAGE_SIZE);
}

/*
 * Copies @n bytes, as the C driver's small metadata copies are made: the sizes of metadata
 * windows (8, 16, 32, 64 bytes) with constant-size memcpy()s that GCC expands inline, others
 * with the out-of-line memcpy (`rep movsb` on CPUs with FSRM, which -icount counts as one
 * instruction a byte: the 64-byte window of a cold random read's index lookups cost it 70).
 */
void erofs_rs_glue_memcpy_small(void *to, const void *from, size_t n)
{
	switch (n) {
	case 8:
		memcpy(to, from, 8);
		break;
	case 16:
		memcpy(to, from, 16);
		break;
	case 32:
		memcpy(to, from, 32);
		break;
	case 64:
		memcpy(to, from, 64);
		break;
	default:
		memcpy(to, from, n);
	}
}

/* Maps the page of @folio at byte @offset; unmap with kunmap_local(). */
void *erofs_rs_glue_kmap_local_folio(struct folio *folio, size_t offset)
{
	return kmap_local_folio(folio, offset);
}

/* The folio's address in the direct map; NULL for a highmem folio. */
void *erofs_rs_glue_folio_address(const struct folio *folio)
{
	return folio_address(folio);
}

void erofs_rs_glue_folio_put(struct folio *folio)
{
	folio_put(folio);
}

/* For the KUnit test of LockedFolio (vfs/kunit.rs). */
bool erofs_rs_glue_folio_trylock(struct folio *folio)
{
	return folio_trylock(folio);
}

bool erofs_rs_glue_folio_test_locked(struct folio *folio)
{
	return folio_test_locked(folio);
}
