/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * erofs_rs glue: the C side of the boundary between the kernel and the Rust driver.
 *
 * Functions named erofs_rs_glue_*() are C, called from Rust (vfs/ffi.rs declares them).
 * Functions named erofs_rs_*() without "glue" are Rust trampolines (vfs/trampolines.rs,
 * vfs/super_block.rs, vfs/sysfs.rs, ...), called from the operation tables in glue.c. No function here decides anything about the
 * image: that is Rust's job.
 */
#ifndef __EROFS_RS_GLUE_H
#define __EROFS_RS_GLUE_H

#include <linux/fs.h>
#include <linux/fs_context.h>
#include <linux/fs_parser.h>

/* s_magic of our superblocks and of the pseudo filesystem of shared inodes. */
#define EROFS_RS_SUPER_MAGIC	0xE0F5E1E2

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

/* The operation tables Rust puts into superblocks and inodes (vfs/super_block.rs). */
struct export_operations;
struct xattr_handler;
struct erofs_rs_tables {
	const struct super_operations *sops;
	const struct export_operations *export_ops;
	const struct xattr_handler * const *xattr_handlers;
	const struct inode_operations *dir_iops, *generic_iops, *symlink_iops;
	const struct file_operations *file_fops, *dir_fops;
	const struct address_space_operations *aops, *iomap_aops, *z_aops;
};
extern const struct erofs_rs_tables erofs_rs_tables;

/* Rust trampolines. */
int erofs_rs_init_fs_context(struct fs_context *fc);
int erofs_rs_fc_parse_param(struct fs_context *fc, struct fs_parameter *param);
int erofs_rs_fc_get_tree(struct fs_context *fc);
int erofs_rs_fc_reconfigure(struct fs_context *fc);
void erofs_rs_fc_free(struct fs_context *fc);
int erofs_rs_show_options(struct seq_file *seq, struct dentry *root);
void erofs_rs_put_inodes(struct super_block *sb);
void erofs_rs_kill_sb(struct super_block *sb);
int erofs_rs_statfs(struct dentry *dentry, struct kstatfs *buf);
int erofs_rs_read_folio(struct file *file, struct folio *folio);
int erofs_rs_readdir(struct file *file, struct dir_context *ctx);
struct dentry *erofs_rs_lookup(struct inode *dir, struct dentry *dentry, unsigned int flags);

/* The inode container and page-cache sharing (vfs/inode_cache.rs, vfs/ishare.rs). */
struct kiocb;
struct iov_iter;
struct vm_area_struct;
struct pipe_inode_info;
struct kmem_cache;
struct inode *erofs_rs_alloc_inode(struct super_block *sb);
void erofs_rs_free_inode(struct inode *inode);
void erofs_rs_evict_inode(struct inode *inode);
struct inode *erofs_rs_real_inode(struct inode *inode, bool *need_iput);
int erofs_rs_anon_init_fs_context(struct fs_context *fc);
int erofs_rs_ishare_backing_release(struct inode *inode, struct file *file);
int erofs_rs_ishare_file_open(struct inode *inode, struct file *file);
int erofs_rs_ishare_file_release(struct inode *inode, struct file *file);
ssize_t erofs_rs_ishare_read_iter(struct kiocb *iocb, struct iov_iter *to);
int erofs_rs_ishare_mmap(struct file *file, struct vm_area_struct *vma);
ssize_t erofs_rs_ishare_splice_read(struct file *in, loff_t *ppos, struct pipe_inode_info *pipe,
				    size_t len, unsigned int flags);
int erofs_rs_ishare_fadvise(struct file *file, loff_t offset, loff_t len, int advice);

/* Tables in glue.c that Rust names. */
extern struct file_system_type erofs_rs_fs_type;
extern struct file_system_type erofs_rs_anon_fs_type;
extern const struct super_operations erofs_rs_anon_sops;
extern const struct file_operations erofs_rs_ishare_fops;
extern const struct file_operations erofs_rs_ishare_backing_fops;

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
loff_t erofs_rs_glue_i_size_read(const struct inode *inode);
void erofs_rs_glue_init_sync_kiocb(struct kiocb *kiocb, struct file *file);
struct page *erofs_rs_glue_virt_to_page(const void *addr);
const struct cred *erofs_rs_glue_override_creds(const struct cred *cred);
void erofs_rs_glue_revert_creds(const struct cred *old);
bool erofs_rs_glue_inode_is_new(struct inode *inode);
void erofs_rs_glue_i_uid_write(struct inode *inode, uid_t uid);
void erofs_rs_glue_i_gid_write(struct inode *inode, gid_t gid);
void erofs_rs_glue_mapping_set_large_folios(struct address_space *mapping);
const char *erofs_rs_glue_fstype(void);
struct inode *erofs_rs_glue_alloc_inode_sb(struct super_block *sb, struct kmem_cache *cache,
					   gfp_t gfp);
bool erofs_rs_glue_mapping_large_folio_support(struct address_space *mapping);
void erofs_rs_glue_list_del(struct list_head *entry);
const struct cred *erofs_rs_glue_current_cred(void);
void erofs_rs_glue_kiocb_clone(struct kiocb *kiocb, struct kiocb *src, struct file *filp);
int erofs_rs_glue_security_mmap_backing_file(struct vm_area_struct *vma, struct file *backing,
					     struct file *user);
bool erofs_rs_glue_dir_emit(struct dir_context *ctx, const u8 *name, u32 len, u64 ino, u8 ftype);
bool erofs_rs_glue_fatal_signal_pending(void);
void erofs_rs_glue_cond_resched(void);
u64 erofs_rs_glue_folio_pos(struct folio *folio);
size_t erofs_rs_glue_folio_size(struct folio *folio);
void *erofs_rs_glue_kmap_local_folio(struct folio *folio, size_t offset);
void erofs_rs_glue_folio_put(struct folio *folio);

/* Compressed reads (zglue.c). */
struct readahead_control;

int erofs_rs_z_read_folio(struct file *file, struct folio *folio);
void erofs_rs_z_readahead(struct readahead_control *rac);

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
extern struct kobj_attribute erofs_rs_accel_attr;
ssize_t erofs_rs_feature_show(struct kobject *kobj, struct kobj_attribute *attr, char *buf);
extern const struct attribute_group erofs_rs_feat_group;
struct folio *erofs_rs_glue_readahead_folio(struct readahead_control *rac);
u64 erofs_rs_glue_readahead_pos(struct readahead_control *rac);
u64 erofs_rs_glue_readahead_length(struct readahead_control *rac);

#endif
