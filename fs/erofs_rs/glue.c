// SPDX-License-Identifier: GPL-2.0-only
/*
 * erofs_rs glue: operation tables whose entries are Rust trampolines (the fs_context ones and
 * the option table: vfs/fs_context.rs), and plain-function wrappers of static inline kernel
 * helpers that Rust cannot call through bindings. C counterpart of the tables:
 * fs/erofs/super.c, inode.c.
 */
#include <linux/crypto.h>
#include <linux/fs.h>
#include <linux/fs_context.h>
#include <linux/fs_parser.h>
#include <linux/module.h>
#include <linux/pagemap.h>
#include <linux/highmem.h>
#include <linux/blkdev.h>
#include <linux/statfs.h>
#include <linux/namei.h>
#include <linux/backing-dev.h>
#include <linux/crc32c.h>
#include <linux/xxhash.h>
#include <linux/backing-file.h>
#include <linux/pseudo_fs.h>
#include <linux/security.h>
#include <linux/fadvise.h>
#include <linux/xattr.h>
#include <linux/posix_acl_xattr.h>
#include <linux/seq_file.h>
#include <linux/iomap.h>
#include <linux/exportfs.h>
#include <linux/uio.h>
#include "glue.h"

/* The `fstype` parameter stays here: 7.3's Rust module! has no string (charp) parameters. */
static char *fstype = "erofs";
module_param(fstype, charp, 0444);
MODULE_PARM_DESC(fstype, "name to register the filesystem type under (default: erofs)");

#define EROFS_NAME_LEN		255

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

/* Extended attributes and ACLs: as fs/erofs/xattr.c, with the lookups in Rust (xattr.rs). */

#define EROFS_XATTR_INDEX_USER			1
#define EROFS_XATTR_INDEX_POSIX_ACL_ACCESS	2
#define EROFS_XATTR_INDEX_POSIX_ACL_DEFAULT	3
#define EROFS_XATTR_INDEX_TRUSTED		4
#define EROFS_XATTR_INDEX_SECURITY		6

static bool erofs_rs_xattr_user_list(struct dentry *dentry)
{
	return erofs_rs_sb_user_xattr(dentry->d_sb);
}

static bool erofs_rs_xattr_trusted_list(struct dentry *dentry)
{
	return capable(CAP_SYS_ADMIN);
}

static int erofs_rs_xattr_get(const struct xattr_handler *handler, struct dentry *unused,
			      struct inode *inode, const char *name, void *buffer, size_t size)
{
	return erofs_rs_getxattr(inode, handler->flags, name, strlen(name), buffer, size);
}

static const struct xattr_handler erofs_rs_xattr_user_handler = {
	.prefix	= XATTR_USER_PREFIX,
	.flags	= EROFS_XATTR_INDEX_USER,
	.list	= erofs_rs_xattr_user_list,
	.get	= erofs_rs_xattr_get,
};

static const struct xattr_handler erofs_rs_xattr_trusted_handler = {
	.prefix	= XATTR_TRUSTED_PREFIX,
	.flags	= EROFS_XATTR_INDEX_TRUSTED,
	.list	= erofs_rs_xattr_trusted_list,
	.get	= erofs_rs_xattr_get,
};

static const struct xattr_handler erofs_rs_xattr_security_handler = {
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

/* The prefix listxattr shows for short prefix @idx, or NULL if @dentry's caller may not see it. */
const char *erofs_rs_glue_xattr_prefix(unsigned int idx, struct dentry *dentry)
{
	static const struct xattr_handler * const map[] = {
		[EROFS_XATTR_INDEX_USER] = &erofs_rs_xattr_user_handler,
		[EROFS_XATTR_INDEX_POSIX_ACL_ACCESS] = &nop_posix_acl_access,
		[EROFS_XATTR_INDEX_POSIX_ACL_DEFAULT] = &nop_posix_acl_default,
		[EROFS_XATTR_INDEX_TRUSTED] = &erofs_rs_xattr_trusted_handler,
		[EROFS_XATTR_INDEX_SECURITY] = &erofs_rs_xattr_security_handler,
	};

	if (idx && idx < ARRAY_SIZE(map) && map[idx] && xattr_handler_can_list(map[idx], dentry))
		return xattr_prefix(map[idx]);
	return NULL;
}

static struct posix_acl *erofs_rs_get_acl(struct inode *inode, int type, bool rcu)
{
	struct posix_acl *acl;
	int index, rc;
	char *value = NULL;

	if (rcu)
		return ERR_PTR(-ECHILD);
	switch (type) {
	case ACL_TYPE_ACCESS:
		index = EROFS_XATTR_INDEX_POSIX_ACL_ACCESS;
		break;
	case ACL_TYPE_DEFAULT:
		index = EROFS_XATTR_INDEX_POSIX_ACL_DEFAULT;
		break;
	default:
		return ERR_PTR(-EINVAL);
	}
	rc = erofs_rs_getxattr(inode, index, "", 0, NULL, 0);
	if (rc > 0) {
		value = kmalloc(rc, GFP_KERNEL);
		if (!value)
			return ERR_PTR(-ENOMEM);
		rc = erofs_rs_getxattr(inode, index, "", 0, value, rc);
	}
	if (rc == -ENODATA)
		acl = NULL;
	else if (rc < 0)
		acl = ERR_PTR(rc);
	else
		acl = posix_acl_from_xattr(&init_user_ns, value, rc);
	kfree(value);
	return acl;
}

/*
 * iomap: block-device mounts read file data through iomap's bios (read_folio, readahead,
 * O_DIRECT), and every mount reports extents through it (FIEMAP, SEEK_DATA/SEEK_HOLE, bmap),
 * as fs/erofs/data.c. The mapping itself is Rust's erofs_rs_iomap_map().
 */
struct erofs_rs_iomap_ctx {
	void *inline_buf;	/* PAGE_SIZE, allocated on the first inline extent of a read */
	struct inode *realinode;	/* the inode to map (erofs_real_inode of a shared one) */
};

static int erofs_rs_iomap_begin(struct inode *inode, loff_t offset, loff_t length,
				unsigned int flags, struct iomap *iomap, struct iomap *srcmap)
{
	struct iomap_iter *iter = container_of(iomap, struct iomap_iter, iomap);
	struct erofs_rs_iomap_ctx *ctx = iter->private;
	struct erofs_rs_extent ext;
	void *buf = NULL;
	int ret;

	if (ctx) {
		if (!ctx->inline_buf)
			ctx->inline_buf = kmalloc(PAGE_SIZE, GFP_NOFS);
		if (!ctx->inline_buf)
			return -ENOMEM;
		buf = ctx->inline_buf;
	}
	if (ctx && ctx->realinode)
		inode = ctx->realinode;
	ret = erofs_rs_iomap_map(inode, offset, length, &ext, buf);
	if (ret)
		return ret;
	iomap->offset = ext.la;
	iomap->length = ext.llen;
	iomap->flags = 0;
	iomap->addr = IOMAP_NULL_ADDR;
	switch (ext.kind) {
	case EROFS_RS_EXT_HOLE:
		iomap->type = IOMAP_HOLE;
		break;
	case EROFS_RS_EXT_MAPPED:
		iomap->type = IOMAP_MAPPED;
		iomap->bdev = ext.file ? file_bdev(ext.file) : inode->i_sb->s_bdev;
		iomap->addr = ext.pa;
		break;
	default:
		iomap->type = IOMAP_INLINE;
		iomap->addr = ext.pa;
		iomap->inline_data = buf;
		break;
	}
	return 0;
}

static int erofs_rs_iomap_end(struct inode *inode, loff_t pos, loff_t length,
			      ssize_t written, unsigned int flags, struct iomap *iomap)
{
	return written;
}

static DEFINE_IOMAP_ITER_NEXT_END(erofs_rs_iomap_next, erofs_rs_iomap_begin, erofs_rs_iomap_end);

static const struct iomap_ops erofs_rs_iomap_ops = {
	.iomap_next = erofs_rs_iomap_next,
};

static int erofs_rs_iomap_read_folio(struct file *file, struct folio *folio)
{
	struct iomap_read_folio_ctx read_ctx = {
		.ops		= &iomap_bio_read_ops,
		.cur_folio	= folio,
	};
	struct erofs_rs_iomap_ctx iter_ctx = {};
	bool need_iput;

	iter_ctx.realinode = erofs_rs_real_inode(folio_inode(folio), &need_iput);
	if (!iter_ctx.realinode) {
		folio_unlock(folio);
		return -EIO;
	}
	iomap_read_folio(&erofs_rs_iomap_ops, &read_ctx, &iter_ctx);
	kfree(iter_ctx.inline_buf);
	if (need_iput)
		iput(iter_ctx.realinode);
	return 0;
}

static void erofs_rs_iomap_readahead(struct readahead_control *rac)
{
	struct iomap_read_folio_ctx read_ctx = {
		.ops		= &iomap_bio_read_ops,
		.rac		= rac,
	};
	struct erofs_rs_iomap_ctx iter_ctx = {};
	bool need_iput;

	iter_ctx.realinode = erofs_rs_real_inode(rac->mapping->host, &need_iput);
	if (!iter_ctx.realinode)
		return;
	iomap_readahead(&erofs_rs_iomap_ops, &read_ctx, &iter_ctx);
	kfree(iter_ctx.inline_buf);
	if (need_iput)
		iput(iter_ctx.realinode);
}

static sector_t erofs_rs_bmap(struct address_space *mapping, sector_t block)
{
	return iomap_bmap(mapping, block, &erofs_rs_iomap_ops);
}

static int erofs_rs_fiemap(struct inode *inode, struct fiemap_extent_info *fieinfo,
			   u64 start, u64 len)
{
	return iomap_fiemap(inode, fieinfo, start, len, &erofs_rs_iomap_ops);
}

static loff_t erofs_rs_file_llseek(struct file *file, loff_t offset, int whence)
{
	struct inode *inode = file->f_mapping->host;

	if (whence == SEEK_HOLE)
		offset = iomap_seek_hole(inode, offset, &erofs_rs_iomap_ops);
	else if (whence == SEEK_DATA)
		offset = iomap_seek_data(inode, offset, &erofs_rs_iomap_ops);
	else
		return generic_file_llseek(file, offset, whence);
	if (offset < 0)
		return offset;
	return vfs_setpos(file, offset, inode->i_sb->s_maxbytes);
}

static ssize_t erofs_rs_file_read_iter(struct kiocb *iocb, struct iov_iter *to)
{
	struct inode *inode = file_inode(iocb->ki_filp);

	if (!iov_iter_count(to))
		return 0;
	if ((iocb->ki_flags & IOCB_DIRECT) && inode->i_sb->s_bdev) {
		struct erofs_rs_iomap_ctx iter_ctx = {};
		ssize_t ret = iomap_dio_rw(iocb, to, &erofs_rs_iomap_ops, NULL, 0, &iter_ctx, 0);

		kfree(iter_ctx.inline_buf);
		return ret;
	}
	return filemap_read(iocb, to, 0);
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

/* As erofs_getattr(): immutable, and the O_DIRECT alignment of block-device mounts. */
static int erofs_rs_getattr(struct mnt_idmap *idmap, const struct path *path,
			    struct kstat *stat, u32 request_mask, unsigned int query_flags)
{
	struct inode *const inode = d_inode(path->dentry);
	struct block_device *bdev = inode->i_sb->s_bdev;

	stat->attributes |= STATX_ATTR_IMMUTABLE;
	stat->attributes_mask |= (STATX_ATTR_COMPRESSED | STATX_ATTR_IMMUTABLE);
	if ((request_mask & STATX_DIOALIGN) && S_ISREG(inode->i_mode)) {
		stat->result_mask |= STATX_DIOALIGN;
		if (bdev) {
			stat->dio_mem_align = bdev_dma_alignment(bdev) + 1;
			stat->dio_offset_align = bdev_logical_block_size(bdev);
		}
	}
	generic_fillattr(idmap, request_mask, inode, stat);
	return 0;
}

static const struct constant_table erofs_rs_param_cache_strategy[] = {
	{ "disabled",	EROFS_RS_CACHE_DISABLED },
	{ "readahead",	EROFS_RS_CACHE_READAHEAD },
	{ "readaround",	EROFS_RS_CACHE_READAROUND },
	{}
};

/* NFS export: file handles carry the nid (not i_ino, with a metabox), as fs/erofs/super.c. */
static int erofs_rs_encode_fh(struct inode *inode, u32 *fh, int *max_len, struct inode *parent)
{
	u64 nid = erofs_rs_inode_nid(inode);
	int len = parent ? 6 : 3;

	if (*max_len < len) {
		*max_len = len;
		return FILEID_INVALID;
	}
	fh[0] = (u32)(nid >> 32);
	fh[1] = (u32)(nid & 0xffffffff);
	fh[2] = inode->i_generation;
	if (parent) {
		nid = erofs_rs_inode_nid(parent);
		fh[3] = (u32)(nid >> 32);
		fh[4] = (u32)(nid & 0xffffffff);
		fh[5] = parent->i_generation;
	}
	*max_len = len;
	return parent ? FILEID_INO64_GEN_PARENT : FILEID_INO64_GEN;
}

static struct dentry *erofs_rs_fh_to_dentry(struct super_block *sb, struct fid *fid,
					    int fh_len, int fh_type)
{
	if ((fh_type != FILEID_INO64_GEN && fh_type != FILEID_INO64_GEN_PARENT) || fh_len < 3)
		return NULL;
	return d_obtain_alias(erofs_rs_iget(sb, ((u64)fid->raw[0] << 32) | fid->raw[1]));
}

static struct dentry *erofs_rs_fh_to_parent(struct super_block *sb, struct fid *fid,
					    int fh_len, int fh_type)
{
	if (fh_type != FILEID_INO64_GEN_PARENT || fh_len < 6)
		return NULL;
	return d_obtain_alias(erofs_rs_iget(sb, ((u64)fid->raw[3] << 32) | fid->raw[4]));
}

static struct dentry *erofs_rs_get_parent(struct dentry *child)
{
	return d_obtain_alias(erofs_rs_iget_parent(d_inode(child)));
}

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

static int erofs_rs_iomap_read_folio(struct file *file, struct folio *folio);
static void erofs_rs_iomap_readahead(struct readahead_control *rac);
static sector_t erofs_rs_bmap(struct address_space *mapping, sector_t block);

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
