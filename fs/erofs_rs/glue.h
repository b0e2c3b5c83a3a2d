/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * erofs_rs glue: the C side of the boundary between the kernel and the Rust driver.
 *
 * Functions named erofs_rs_glue_*() are C, called from Rust (vfs/ffi.rs declares them).
 * Functions named erofs_rs_*() without "glue" are Rust trampolines (vfs/trampolines.rs),
 * called from the operation tables in glue.c. No function here decides anything about the
 * image: that is Rust's job.
 */
#ifndef __EROFS_RS_GLUE_H
#define __EROFS_RS_GLUE_H

#include <linux/fs.h>
#include <linux/fs_context.h>
#include <linux/fs_parser.h>

/* Bytes reserved per inode for the Rust `InodeInfo`; Rust checks at init that it fits. */
#define EROFS_RS_INODE_INFO_BYTES	128

/*
 * Mount options: the keys of the fs_parameter_spec table (glue.c) and the values of its
 * enums. Rust (vfs/fs_context.rs) parses them and owns the result.
 */
enum erofs_rs_param {
	Opt_user_xattr,
	Opt_acl,
	Opt_cache_strategy,
	Opt_fsoffset,
	Opt_device,
	Opt_directio,
	Opt_decomp_pcpu_kthreads,
	Opt_decomp_accel,
	Opt_decomp_accel_min,
	Opt_dax,
	Opt_dax_enum,
	Opt_domain_id,
	Opt_inode_share,
	Opt_source,
};

#define EROFS_RS_CACHE_DISABLED		0
#define EROFS_RS_CACHE_READAHEAD	1
#define EROFS_RS_CACHE_READAROUND	2

#define EROFS_RS_DAX_ALWAYS		1
#define EROFS_RS_DAX_NEVER		2

extern const struct fs_parameter_spec erofs_rs_fs_parameters[];
extern const struct fs_context_operations erofs_rs_context_ops;

/* Rust trampolines. */
int erofs_rs_init_fs_context(struct fs_context *fc);
int erofs_rs_fc_parse_param(struct fs_context *fc, struct fs_parameter *param);
int erofs_rs_fc_get_tree(struct fs_context *fc);
int erofs_rs_fc_reconfigure(struct fs_context *fc);
void erofs_rs_fc_free(struct fs_context *fc);
int erofs_rs_show_options(struct seq_file *seq, struct dentry *root);
void erofs_rs_put_super(void *sbi);
void erofs_rs_put_inodes(struct super_block *sb);
int erofs_rs_statfs(struct dentry *dentry, struct kstatfs *buf);
int erofs_rs_read_folio(struct file *file, struct folio *folio);
int erofs_rs_readdir(struct file *file, struct dir_context *ctx);
struct dentry *erofs_rs_lookup(struct inode *dir, struct dentry *dentry, unsigned int flags);

/* xattr handlers and ACLs (vfs/xattr.rs); the handlers are glue.c's. */
struct xattr_handler;
struct posix_acl;
extern const struct xattr_handler erofs_rs_xattr_user_handler;
extern const struct xattr_handler erofs_rs_xattr_trusted_handler;
extern const struct xattr_handler erofs_rs_xattr_security_handler;
bool erofs_rs_xattr_user_list(struct dentry *dentry);
bool erofs_rs_xattr_trusted_list(struct dentry *dentry);
int erofs_rs_xattr_get(const struct xattr_handler *handler, struct dentry *dentry,
		       struct inode *inode, const char *name, void *buffer, size_t size);
ssize_t erofs_rs_listxattr(struct dentry *dentry, char *buffer, size_t size);
struct posix_acl *erofs_rs_get_acl(struct inode *inode, int type, bool rcu);

/* iomap, regular files and getattr (vfs/iomap.rs); the iomap_ops table is glue.c's. */
struct iomap;
struct iomap_ops;
struct fiemap_extent_info;
struct kstat;
extern const struct iomap_ops erofs_rs_iomap_ops;
int erofs_rs_iomap_begin(struct inode *inode, loff_t offset, loff_t length, unsigned int flags,
			 struct iomap *iomap, struct iomap *srcmap);
int erofs_rs_iomap_read_folio(struct file *file, struct folio *folio);
void erofs_rs_iomap_readahead(struct readahead_control *rac);
sector_t erofs_rs_bmap(struct address_space *mapping, sector_t block);
int erofs_rs_fiemap(struct inode *inode, struct fiemap_extent_info *fieinfo, u64 start, u64 len);
loff_t erofs_rs_file_llseek(struct file *file, loff_t offset, int whence);
ssize_t erofs_rs_file_read_iter(struct kiocb *iocb, struct iov_iter *to);
int erofs_rs_getattr(struct mnt_idmap *idmap, const struct path *path, struct kstat *stat,
		     u32 request_mask, unsigned int query_flags);
unsigned int erofs_rs_glue_bdev_dma_alignment(struct block_device *bdev);
unsigned int erofs_rs_glue_bdev_logical_block_size(struct block_device *bdev);

/* NFS export (vfs/export.rs); the export_operations table is glue.c's. */
struct fid;
int erofs_rs_encode_fh(struct inode *inode, u32 *fh, int *max_len, struct inode *parent);
struct dentry *erofs_rs_fh_to_dentry(struct super_block *sb, struct fid *fid, int fh_len,
				     int fh_type);
struct dentry *erofs_rs_fh_to_parent(struct super_block *sb, struct fid *fid, int fh_len,
				     int fh_type);
struct dentry *erofs_rs_get_parent(struct dentry *child);

/* C helpers, called from Rust (vfs/ffi.rs). */
struct file *erofs_rs_glue_open_device(struct super_block *sb, const char *path, bool file_mode);
u64 erofs_rs_glue_file_bytes(struct file *file);
void erofs_rs_glue_release_device(struct file *file, struct super_block *sb);
ssize_t erofs_rs_glue_file_read_direct(struct file *file, u64 pos, void *buf, size_t len);
struct address_space *erofs_rs_glue_file_mapping(struct file *file);
bool erofs_rs_glue_capable_sys_admin(void);
int erofs_rs_glue_init(size_t info_size);
void erofs_rs_glue_exit(void);
void *erofs_rs_glue_sb_info(struct super_block *sb);
int erofs_rs_glue_sb_prepare(struct super_block *sb);
void erofs_rs_glue_sb_attach(struct super_block *sb, void *sbi);
int erofs_rs_glue_sb_set_blocksize(struct super_block *sb, unsigned int blkszbits);
void erofs_rs_glue_sb_set_uuid(struct super_block *sb, const u8 *uuid);
struct address_space *erofs_rs_glue_sb_mapping(struct super_block *sb, struct file *file);
int erofs_rs_glue_bdev_read(struct super_block *sb, u64 pos, void *buf, size_t len);
u64 erofs_rs_glue_sb_device_bytes(struct super_block *sb, struct file *file);
int erofs_rs_glue_set_root(struct super_block *sb, struct inode *root);
void erofs_rs_glue_statfs(struct dentry *dentry, struct kstatfs *buf, u64 blocks, u64 inos);
u32 erofs_rs_glue_crc32c(u32 crc, const void *p, size_t len);
u32 erofs_rs_glue_xxh32(const void *p, size_t len, u32 seed);
bool erofs_rs_glue_ishare_fill(struct inode *inode, const void *fp, u32 fp_size);
struct inode *erofs_rs_glue_real_inode(struct inode *inode, bool *need_iput);
struct inode *erofs_rs_glue_iget_locked(struct super_block *sb, u64 ino, bool *is_new);
void *erofs_rs_glue_inode_info(struct inode *inode);
void erofs_rs_glue_inode_fill(struct inode *inode, umode_t mode, u32 uid, u32 gid, u32 nlink, u64 size, s64 mtime, u32 mtime_nsec, u32 rdev, u64 blocks, bool compressed);
const u8 *erofs_rs_glue_dentry_name(struct dentry *dentry, u32 *len);
bool erofs_rs_glue_dir_emit(struct dir_context *ctx, const u8 *name, u32 len, u64 ino, u8 ftype);
bool erofs_rs_glue_dir_emit_dot(struct file *file, struct dir_context *ctx);
bool erofs_rs_glue_fatal_signal_pending(void);
void erofs_rs_glue_cond_resched(void);
struct inode *erofs_rs_glue_folio_inode(struct folio *folio);
u64 erofs_rs_glue_folio_pos(struct folio *folio);
size_t erofs_rs_glue_folio_size(struct folio *folio);
void *erofs_rs_glue_kmap_local_folio(struct folio *folio, size_t offset);
struct folio *erofs_rs_glue_read_mapping_folio(struct address_space *mapping, u64 index, struct file *file);
void erofs_rs_glue_folio_put(struct folio *folio);
void erofs_rs_glue_log(struct super_block *sb, bool err, const char *msg, size_t len);

/* Compressed reads (zglue.c). */
struct readahead_control;

int erofs_rs_z_read_folio(struct file *file, struct folio *folio);
void erofs_rs_z_readahead(struct readahead_control *rac);

int erofs_rs_glue_zinit(void);
void erofs_rs_glue_zexit(void);
struct folio_iter;
bool erofs_rs_glue_bio_in_atomic(void);
void erofs_rs_glue_bio_first_folio(struct folio_iter *fi, struct bio *bio);
void erofs_rs_glue_bio_next_folio(struct folio_iter *fi, struct bio *bio);
unsigned int erofs_rs_glue_memalloc_noio_save(void);
void erofs_rs_glue_memalloc_noio_restore(unsigned int flags);
u64 erofs_rs_glue_bdev_nr_bytes(struct block_device *bdev);
void erofs_rs_glue_folio_zero_segment(struct folio *folio, size_t start, size_t end);
gfp_t erofs_rs_glue_mapping_gfp_mask(struct address_space *mapping);
bool erofs_rs_glue_folio_test_uptodate(struct folio *folio);
struct folio *erofs_rs_glue_grab_folio_nowait(struct inode *inode, u64 index);
void *erofs_rs_glue_vmap_folios(struct folio **folios, unsigned int count);
void erofs_rs_glue_vunmap(void *addr, unsigned int count);
struct folio *erofs_rs_glue_bounce_alloc(void);
struct crypto_acomp;
struct acomp_req;
struct scatterlist;
struct seq_file;
struct kobject;
struct kobj_attribute;
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
/* Rust trampolines of the offload's sysfs file (vfs/acomp.rs). */
ssize_t erofs_rs_accel_attr_show(struct kobject *kobj, struct kobj_attribute *attr, char *buf);
ssize_t erofs_rs_accel_attr_store(struct kobject *kobj, struct kobj_attribute *attr,
				  const char *buf, size_t len);
struct folio *erofs_rs_glue_readahead_folio(struct readahead_control *rac);
u64 erofs_rs_glue_readahead_pos(struct readahead_control *rac);
u64 erofs_rs_glue_readahead_length(struct readahead_control *rac);
void erofs_rs_glue_readahead_expand(struct readahead_control *rac, u64 start, u64 len);
struct inode *erofs_rs_glue_readahead_inode(struct readahead_control *rac);

#endif
