// SPDX-License-Identifier: GPL-2.0-only
/*
 * erofs_rs glue: operation tables whose entries are Rust trampolines (the fs_context ones and
 * the option table: vfs/fs_context.rs), and plain-function wrappers of static inline kernel
 * helpers that Rust cannot call through bindings. C counterpart of the tables:
 * fs/erofs/super.c, inode.c.
 */
#include <linux/fs.h>
#include <linux/fs_context.h>
#include <linux/fs_parser.h>
#include <linux/module.h>
#include <linux/pagemap.h>
#include <linux/xattr.h>
#include <linux/posix_acl_xattr.h>
#include <linux/iomap.h>
#include <linux/exportfs.h>
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

/* Page-cache sharing (vfs/ishare.rs): the pseudo filesystem of shared inodes. */
const struct super_operations erofs_rs_anon_sops = {
	.alloc_inode	= erofs_rs_alloc_inode,
	.drop_inode	= inode_just_drop,
	.free_inode	= erofs_rs_free_inode,
};

struct file_system_type erofs_rs_anon_fs_type = {
	.name		= "pseudo_erofs_rs",
	.init_fs_context = erofs_rs_anon_init_fs_context,
	.kill_sb	= kill_anon_super,
};

/* The shared inode's own file (backing_file_open's): it pins one real inode while open. */
const struct file_operations erofs_rs_ishare_backing_fops = {
	.release	= erofs_rs_ishare_backing_release,
};

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

/*
 * Extended attributes and ACLs, as fs/erofs/xattr.c: the handlers' functions, the prefixes
 * listxattr shows and the ACLs are Rust (vfs/xattr.rs). .flags is the short prefix index.
 */
#define EROFS_XATTR_INDEX_USER		1
#define EROFS_XATTR_INDEX_TRUSTED	4
#define EROFS_XATTR_INDEX_SECURITY	6

const struct xattr_handler erofs_rs_xattr_user_handler = {
	.prefix	= XATTR_USER_PREFIX,
	.flags	= EROFS_XATTR_INDEX_USER,
	.list	= erofs_rs_xattr_user_list,
	.get	= erofs_rs_xattr_get,
};

const struct xattr_handler erofs_rs_xattr_trusted_handler = {
	.prefix	= XATTR_TRUSTED_PREFIX,
	.flags	= EROFS_XATTR_INDEX_TRUSTED,
	.list	= erofs_rs_xattr_trusted_list,
	.get	= erofs_rs_xattr_get,
};

const struct xattr_handler erofs_rs_xattr_security_handler = {
	.prefix	= XATTR_SECURITY_PREFIX,
	.flags	= EROFS_XATTR_INDEX_SECURITY,
	.get	= erofs_rs_xattr_get,
};

static const struct xattr_handler * const erofs_rs_xattr_handlers[] = {
	&erofs_rs_xattr_user_handler,
	&erofs_rs_xattr_trusted_handler,
	&erofs_rs_xattr_security_handler,
	NULL,
};

/*
 * iomap, as fs/erofs/data.c: block-device mounts read file data through iomap's bios, and every
 * mount reports extents through it. The mapping and the entry points are Rust (vfs/iomap.rs).
 */
const struct iomap_ops erofs_rs_iomap_ops = {
	.iomap_begin	= erofs_rs_iomap_begin,
};

unsigned int erofs_rs_glue_bdev_dma_alignment(struct block_device *bdev)
{
	return bdev_dma_alignment(bdev);
}

unsigned int erofs_rs_glue_bdev_logical_block_size(struct block_device *bdev)
{
	return bdev_logical_block_size(bdev);
}

static const struct file_operations erofs_rs_file_fops = {
	.llseek		= erofs_rs_file_llseek,
	.read_iter	= erofs_rs_file_read_iter,
	.mmap_prepare	= generic_file_readonly_mmap_prepare,
	.splice_read	= filemap_splice_read,
};

/* Regular files whose reads go through a shared inode (erofs_ishare_fops). */
const struct file_operations erofs_rs_ishare_fops = {
	.open		= erofs_rs_ishare_file_open,
	.llseek		= erofs_rs_file_llseek,
	.read_iter	= erofs_rs_ishare_read_iter,
	.mmap		= erofs_rs_ishare_mmap,
	.release	= erofs_rs_ishare_file_release,
	.splice_read	= erofs_rs_ishare_splice_read,
	.fadvise	= erofs_rs_ishare_fadvise,
};

static const struct constant_table erofs_rs_param_cache_strategy[] = {
	{ "disabled",	EROFS_RS_CACHE_DISABLED },
	{ "readahead",	EROFS_RS_CACHE_READAHEAD },
	{ "readaround",	EROFS_RS_CACHE_READAROUND },
	{}
};

/* NFS export: file handles carry the nid, as fs/erofs/super.c (vfs/export.rs). */
static const struct export_operations erofs_rs_export_ops = {
	.encode_fh	= erofs_rs_encode_fh,
	.fh_to_dentry	= erofs_rs_fh_to_dentry,
	.fh_to_parent	= erofs_rs_fh_to_parent,
	.get_parent	= erofs_rs_get_parent,
};

static const struct super_operations erofs_rs_sops = {
	.put_super	= erofs_rs_put_inodes,
	.alloc_inode	= erofs_rs_alloc_inode,
	.free_inode	= erofs_rs_free_inode,
	.evict_inode	= erofs_rs_evict_inode,
	.statfs		= erofs_rs_statfs,
	.show_options	= erofs_rs_show_options,
};

static const struct inode_operations erofs_rs_dir_iops = {
	.lookup		= erofs_rs_lookup,
	.getattr	= erofs_rs_getattr,
	.listxattr	= erofs_rs_listxattr,
	.get_inode_acl	= erofs_rs_get_acl,
};

static const struct inode_operations erofs_rs_generic_iops = {
	.getattr	= erofs_rs_getattr,
	.listxattr	= erofs_rs_listxattr,
	.get_inode_acl	= erofs_rs_get_acl,
	.fiemap		= erofs_rs_fiemap,
};

static const struct inode_operations erofs_rs_symlink_iops = {
	.get_link	= page_get_link,
	.getattr	= erofs_rs_getattr,
	.listxattr	= erofs_rs_listxattr,
	.get_inode_acl	= erofs_rs_get_acl,
};

static const struct file_operations erofs_rs_dir_fops = {
	.llseek		= generic_file_llseek,
	.read		= generic_read_dir,
	.iterate_shared	= erofs_rs_readdir,
};

/* File-backed mounts: Rust copies from the backing file's page cache. */
static const struct address_space_operations erofs_rs_aops = {
	.read_folio	= erofs_rs_read_folio,
};

/* Block-device mounts: iomap bios, as fs/erofs/data.c's erofs_aops. */
static const struct address_space_operations erofs_rs_iomap_aops = {
	.read_folio	= erofs_rs_iomap_read_folio,
	.readahead	= erofs_rs_iomap_readahead,
	.bmap		= erofs_rs_bmap,
	.direct_IO	= noop_direct_IO,
	.release_folio	= iomap_release_folio,
	.invalidate_folio = iomap_invalidate_folio,
};

/* Compressed files (fs/erofs/zdata.c's z_erofs_aops), for both kinds of mounts. */
static const struct address_space_operations erofs_rs_z_aops = {
	.read_folio	= erofs_rs_z_read_folio,
	.readahead	= erofs_rs_z_readahead,
};

/* Mount options and the fs_context: parsed and acted on in Rust (vfs/fs_context.rs). */

static const struct constant_table erofs_rs_dax_param_enums[] = {
	{ "always",	EROFS_RS_DAX_ALWAYS },
	{ "never",	EROFS_RS_DAX_NEVER },
	{}
};

/* The options; Rust (vfs/fs_context.rs) interprets what fs_parse() finds in this table. */
const struct fs_parameter_spec erofs_rs_fs_parameters[] = {
	fsparam_flag_no("user_xattr",	Opt_user_xattr),
	fsparam_flag_no("acl",		Opt_acl),
	fsparam_enum("cache_strategy",	Opt_cache_strategy, erofs_rs_param_cache_strategy),
	fsparam_u64("fsoffset",		Opt_fsoffset),
	fsparam_string("device",	Opt_device),
	fsparam_flag_no("directio",	Opt_directio),
	fsparam_flag_no("decomp_pcpu_kthreads", Opt_decomp_pcpu_kthreads),
	fsparam_string("decomp_accel",	Opt_decomp_accel),
	fsparam_u32("decomp_accel_min",	Opt_decomp_accel_min),
	fsparam_flag("dax",		Opt_dax),
	fsparam_enum("dax",		Opt_dax_enum, erofs_rs_dax_param_enums),
	fsparam_string("domain_id",	Opt_domain_id),
	fsparam_flag("inode_share",	Opt_inode_share),
	fsparam_file_or_string("source", Opt_source),
	{}
};

const struct fs_context_operations erofs_rs_context_ops = {
	.parse_param	= erofs_rs_fc_parse_param,
	.get_tree	= erofs_rs_fc_get_tree,
	.reconfigure	= erofs_rs_fc_reconfigure,
	.free		= erofs_rs_fc_free,
};

/* The tables Rust installs in superblocks and inodes (vfs/super_block.rs). */
const struct erofs_rs_tables erofs_rs_tables = {
	.sops		= &erofs_rs_sops,
	.export_ops	= &erofs_rs_export_ops,
	.xattr_handlers	= erofs_rs_xattr_handlers,
	.dir_iops	= &erofs_rs_dir_iops,
	.generic_iops	= &erofs_rs_generic_iops,
	.symlink_iops	= &erofs_rs_symlink_iops,
	.file_fops	= &erofs_rs_file_fops,
	.dir_fops	= &erofs_rs_dir_fops,
	.aops		= &erofs_rs_aops,
	.iomap_aops	= &erofs_rs_iomap_aops,
	.z_aops		= &erofs_rs_z_aops,
};

struct file_system_type erofs_rs_fs_type = {
	.owner		= THIS_MODULE,
	.init_fs_context = erofs_rs_init_fs_context,
	.kill_sb	= erofs_rs_kill_sb,
	.fs_flags	= FS_REQUIRES_DEV | FS_ALLOW_IDMAP,
	.parameters	= erofs_rs_fs_parameters,
};

/* One-line wrappers of static inline functions and macros, for vfs/super_block.rs and vfs/mod.rs. */

loff_t erofs_rs_glue_i_size_read(const struct inode *inode)
{
	return i_size_read(inode);
}

void erofs_rs_glue_init_sync_kiocb(struct kiocb *kiocb, struct file *file)
{
	init_sync_kiocb(kiocb, file);
}

struct page *erofs_rs_glue_virt_to_page(const void *addr)
{
	return virt_to_page(addr);
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

/* Maps the page of @folio at byte @offset; unmap with kunmap_local(). */
void *erofs_rs_glue_kmap_local_folio(struct folio *folio, size_t offset)
{
	return kmap_local_folio(folio, offset);
}

void erofs_rs_glue_folio_put(struct folio *folio)
{
	folio_put(folio);
}
