/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * erofs_rs glue: the C side of the boundary between the kernel and the Rust driver.
 *
 * Functions named erofs_rs_glue_*() are C (glue.c, zglue.c), called from Rust through the
 * bindings bindgen generates from this file (vfs/sys.rs): one-line wrappers of static inline
 * kernel functions and macros. No function here decides anything about the image: that is
 * Rust's job, and so are the operation tables (vfs/tables.rs).
 */
#ifndef __EROFS_RS_GLUE_H
#define __EROFS_RS_GLUE_H

#include <linux/fs.h>

struct acomp_req;
struct crypto_acomp;
struct folio_iter;
struct kiocb;
struct kmem_cache;
struct readahead_control;
struct scatterlist;
struct vm_area_struct;

/* glue.c: inodes, files, credentials and folios (vfs/super_block.rs, vfs/mod.rs, ...). */
const char *erofs_rs_glue_fstype(void);
struct inode *erofs_rs_glue_alloc_inode_sb(struct super_block *sb, struct kmem_cache *cache,
					   gfp_t gfp);
bool erofs_rs_glue_inode_is_new(struct inode *inode);
bool erofs_rs_glue_mapping_large_folio_support(struct address_space *mapping);
void erofs_rs_glue_mapping_set_large_folios(struct address_space *mapping);
void erofs_rs_glue_list_del(struct list_head *entry);
const struct cred *erofs_rs_glue_current_cred(void);
void erofs_rs_glue_kiocb_clone(struct kiocb *kiocb, struct kiocb *src, struct file *filp);
int erofs_rs_glue_security_mmap_backing_file(struct vm_area_struct *vma, struct file *backing,
					     struct file *user);
unsigned int erofs_rs_glue_bdev_dma_alignment(struct block_device *bdev);
unsigned int erofs_rs_glue_bdev_logical_block_size(struct block_device *bdev);
loff_t erofs_rs_glue_i_size_read(const struct inode *inode);
void erofs_rs_glue_init_sync_kiocb(struct kiocb *kiocb, struct file *file);
const struct cred *erofs_rs_glue_override_creds(const struct cred *cred);
void erofs_rs_glue_revert_creds(const struct cred *old);
void erofs_rs_glue_i_uid_write(struct inode *inode, uid_t uid);
void erofs_rs_glue_i_gid_write(struct inode *inode, gid_t gid);
bool erofs_rs_glue_dir_emit(struct dir_context *ctx, const u8 *name, u32 len, u64 ino, u8 ftype);
bool erofs_rs_glue_fatal_signal_pending(void);
void erofs_rs_glue_cond_resched(void);
u64 erofs_rs_glue_folio_pos(struct folio *folio);
size_t erofs_rs_glue_folio_size(struct folio *folio);
void erofs_rs_glue_memcpy_page(void *to, const void *from);
void erofs_rs_glue_memcpy_small(void *to, const void *from, size_t n);
void *erofs_rs_glue_kmap_local_folio(struct folio *folio, size_t offset);
void *erofs_rs_glue_folio_address(const struct folio *folio);
void erofs_rs_glue_folio_put(struct folio *folio);
bool erofs_rs_glue_folio_trylock(struct folio *folio);
bool erofs_rs_glue_folio_test_locked(struct folio *folio);

/* zglue.c: compressed reads (vfs/zdata.rs, vfs/bio.rs, vfs/acomp.rs). */
bool erofs_rs_glue_bio_in_atomic(void);
void erofs_rs_glue_bio_first_folio(struct folio_iter *fi, struct bio *bio);
void erofs_rs_glue_bio_next_folio(struct folio_iter *fi, struct bio *bio);
unsigned int erofs_rs_glue_memalloc_noio_save(void);
void erofs_rs_glue_memalloc_noio_restore(unsigned int flags);
u64 erofs_rs_glue_bdev_nr_bytes(struct block_device *bdev);
void erofs_rs_glue_folio_zero_segment(struct folio *folio, size_t start, size_t end);
gfp_t erofs_rs_glue_mapping_gfp_mask(struct address_space *mapping);
bool erofs_rs_glue_folio_test_uptodate(struct folio *folio);
struct folio *erofs_rs_glue_bounce_alloc(void);
void erofs_rs_glue_crypto_free_acomp(struct crypto_acomp *tfm);
const char *erofs_rs_glue_crypto_acomp_driver_name(struct crypto_acomp *tfm);
struct acomp_req *erofs_rs_glue_acomp_request_alloc(struct crypto_acomp *tfm);
void erofs_rs_glue_acomp_request_free(struct acomp_req *req);
void erofs_rs_glue_acomp_request_set_params(struct acomp_req *req, struct scatterlist *src,
					    struct scatterlist *dst, unsigned int slen,
					    unsigned int dlen);
void erofs_rs_glue_acomp_request_set_callback(struct acomp_req *req, u32 flags,
					      void (*cmpl)(void *data, int err), void *data);
void erofs_rs_glue_sg_set_folio(struct scatterlist *sg, struct folio *folio, size_t len,
				size_t offset);
void erofs_rs_glue_folio_get(struct folio *folio);
struct folio *erofs_rs_glue_readahead_folio(struct readahead_control *rac);
u64 erofs_rs_glue_readahead_pos(struct readahead_control *rac);
u64 erofs_rs_glue_readahead_length(struct readahead_control *rac);

#endif
