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

static char *fstype = "erofs";
module_param(fstype, charp, 0444);
MODULE_PARM_DESC(fstype, "name to register the filesystem type under (default: erofs)");

#define EROFS_RS_SUPER_MAGIC	0xE0F5E1E2
#define EROFS_NAME_LEN		255

struct erofs_rs_inode {
	struct inode vfs_inode;
	u64 info[EROFS_RS_INODE_INFO_BYTES / sizeof(u64)];
	/*
	 * Page-cache sharing (inode_share, fs/erofs/ishare.c). A real inode whose reads go
	 * through a shared inode holds its dentry and sits on its list; a shared inode (on the
	 * pseudo filesystem) keeps the fingerprint and the list of real inodes to read from.
	 */
	struct dentry *sharedentry;
	struct list_head ishare_list;
	spinlock_t ishare_lock;
	void *fp;
	u32 fp_size;
};

#define EROFS_RS_I(ptr)	container_of(ptr, struct erofs_rs_inode, vfs_inode)

static struct kmem_cache *erofs_rs_inode_cachep;
static struct file_system_type erofs_rs_fs_type;

static struct inode *erofs_rs_alloc_inode(struct super_block *sb)
{
	struct erofs_rs_inode *vi = alloc_inode_sb(sb, erofs_rs_inode_cachep, GFP_KERNEL);

	if (!vi)
		return NULL;
	memset(vi->info, 0, sizeof(vi->info));
	vi->sharedentry = NULL;
	INIT_LIST_HEAD(&vi->ishare_list);
	spin_lock_init(&vi->ishare_lock);
	vi->fp = NULL;
	vi->fp_size = 0;
	return &vi->vfs_inode;
}

static void erofs_rs_free_inode(struct inode *inode)
{
	kmem_cache_free(erofs_rs_inode_cachep,
			container_of(inode, struct erofs_rs_inode, vfs_inode));
}

/* Page-cache sharing: the pseudo filesystem of shared inodes (erofs_anon_fs_type). */
static struct vfsmount *erofs_rs_ishare_mnt;

static void erofs_rs_free_anon_inode(struct inode *inode)
{
	kfree(EROFS_RS_I(inode)->fp);
	erofs_rs_free_inode(inode);
}

static const struct super_operations erofs_rs_anon_sops = {
	.alloc_inode	= erofs_rs_alloc_inode,
	.drop_inode	= inode_just_drop,
	.free_inode	= erofs_rs_free_anon_inode,
};

static int erofs_rs_anon_init_fs_context(struct fs_context *fc)
{
	struct pseudo_fs_context *ctx = init_pseudo(fc, EROFS_RS_SUPER_MAGIC);

	if (!ctx)
		return -ENOMEM;
	ctx->ops = &erofs_rs_anon_sops;
	return 0;
}

static struct file_system_type erofs_rs_anon_fs_type = {
	.name		= "pseudo_erofs_rs",
	.init_fs_context = erofs_rs_anon_init_fs_context,
	.kill_sb	= kill_anon_super,
};

struct erofs_rs_fingerprint {
	void *fp;
	u32 fp_size;
};

static int erofs_rs_ishare_eq(struct inode *inode, void *data)
{
	struct erofs_rs_inode *vi = EROFS_RS_I(inode);
	struct erofs_rs_fingerprint *key = data;

	return vi->fp_size == key->fp_size && !memcmp(vi->fp, key->fp, key->fp_size);
}

/* Only called on a new inode that gets inserted: the fingerprint passes to it. */
static int erofs_rs_ishare_set(struct inode *inode, void *data)
{
	struct erofs_rs_inode *vi = EROFS_RS_I(inode);
	struct erofs_rs_fingerprint *key = data;

	vi->fp = key->fp;
	vi->fp_size = key->fp_size;
	return 0;
}

/* The shared inode's own file (backing_file_open's): it pins one real inode while open. */
static int erofs_rs_ishare_backing_release(struct inode *inode, struct file *file)
{
	iput(file->private_data);
	file->private_data = NULL;
	return 0;
}

static const struct file_operations erofs_rs_ishare_backing_fops = {
	.release	= erofs_rs_ishare_backing_release,
};

static const struct file_operations erofs_rs_ishare_fops;

/*
 * As erofs_ishare_fill_inode(): makes a regular file's reads go through the shared inode of
 * its fingerprint (fp, fp_size: the domain id, a NUL and the fingerprint xattr), created on
 * first use. Call on an I_NEW inode whose a_ops are set. Returns true when shared.
 */
bool erofs_rs_glue_ishare_fill(struct inode *inode, const void *fp, u32 fp_size)
{
	struct erofs_rs_inode *vi = EROFS_RS_I(inode), *svi;
	struct erofs_rs_fingerprint key;
	struct dentry *sd;
	struct inode *si;

	if (!erofs_rs_ishare_mnt)
		return false;
	key.fp = kmemdup(fp, fp_size, GFP_KERNEL);
	if (!key.fp)
		return false;
	key.fp_size = fp_size;
	si = iget5_locked(erofs_rs_ishare_mnt->mnt_sb, xxh32(fp, fp_size, 0),
			  erofs_rs_ishare_eq, erofs_rs_ishare_set, &key);
	if (si && (inode_state_read_once(si) & I_NEW)) {
		si->i_fop = &erofs_rs_ishare_backing_fops;
		si->i_mapping->a_ops = inode->i_mapping->a_ops;
		si->i_mode = 0444 | S_IFREG;
		si->i_size = inode->i_size;
		if (mapping_large_folio_support(inode->i_mapping))
			mapping_set_large_folios(si->i_mapping);
		unlock_new_inode(si);
	} else {
		kfree(key.fp);
		/* Mounts of different kinds (file, block device) or layouts do not share. */
		if (!si || si->i_mapping->a_ops != inode->i_mapping->a_ops) {
			iput(si);
			return false;
		}
		if (si->i_size != inode->i_size) {
			pr_warn("erofs_rs (device %s): i_size mismatch (%lld != %lld) for the same fingerprint\n",
				inode->i_sb->s_id, inode->i_size, si->i_size);
			iput(si);
			return false;
		}
	}
	sd = d_obtain_alias(si);	/* a disconnected dentry; takes the inode reference */
	if (IS_ERR(sd))
		return false;
	vi->sharedentry = sd;
	svi = EROFS_RS_I(si);
	spin_lock(&svi->ishare_lock);
	list_add(&vi->ishare_list, &svi->ishare_list);
	spin_unlock(&svi->ishare_lock);
	inode->i_fop = &erofs_rs_ishare_fops;
	return true;
}

/* A real inode going away leaves its shared inode's list (erofs_ishare_free_inode). */
static void erofs_rs_ishare_free_inode(struct inode *inode)
{
	struct erofs_rs_inode *vi = EROFS_RS_I(inode), *svi;

	if (!vi->sharedentry)
		return;
	svi = EROFS_RS_I(d_inode(vi->sharedentry));
	spin_lock(&svi->ishare_lock);
	list_del(&vi->ishare_list);
	spin_unlock(&svi->ishare_lock);
	dput(vi->sharedentry);
	vi->sharedentry = NULL;
}

/*
 * The inode to read a folio of inode's page cache with (erofs_real_inode): inode itself, or
 * for a shared inode a referenced real one (*need_iput set), or NULL if none is left.
 */
struct inode *erofs_rs_glue_real_inode(struct inode *inode, bool *need_iput)
{
	struct erofs_rs_inode *svi, *vi;
	struct inode *real = NULL;

	*need_iput = false;
	if (!erofs_rs_ishare_mnt || inode->i_sb != erofs_rs_ishare_mnt->mnt_sb)
		return inode;
	svi = EROFS_RS_I(inode);
	spin_lock(&svi->ishare_lock);
	list_for_each_entry(vi, &svi->ishare_list, ishare_list) {
		real = igrab(&vi->vfs_inode);
		if (real) {
			*need_iput = true;
			break;
		}
	}
	spin_unlock(&svi->ishare_lock);
	return real;
}

static int erofs_rs_ishare_file_open(struct inode *inode, struct file *file)
{
	struct path sharedpath = {
		.mnt = erofs_rs_ishare_mnt,
		.dentry = EROFS_RS_I(inode)->sharedentry,
	};
	struct file *sf;

	if (file->f_flags & O_DIRECT)
		return -EINVAL;
	sf = backing_file_open(file, file->f_flags | O_NOATIME, &sharedpath, current_cred());
	if (IS_ERR(sf))
		return PTR_ERR(sf);
	/* A VMA may outlive this file and keep only the shared one: pin a real inode there. */
	ihold(inode);
	sf->private_data = inode;
	file->private_data = sf;
	return 0;
}

static int erofs_rs_ishare_file_release(struct inode *inode, struct file *file)
{
	fput(file->private_data);
	file->private_data = NULL;
	return 0;
}

static ssize_t erofs_rs_ishare_read_iter(struct kiocb *iocb, struct iov_iter *to)
{
	struct file *sf = iocb->ki_filp->private_data;
	struct kiocb shared;
	ssize_t nread;

	if (!iov_iter_count(to))
		return 0;
	kiocb_clone(&shared, iocb, sf);
	nread = filemap_read(&shared, to, 0);
	iocb->ki_pos = shared.ki_pos;
	return nread;
}

static int erofs_rs_ishare_mmap(struct file *file, struct vm_area_struct *vma)
{
	struct file *sf = file->private_data;
	int err;

	vma_set_file(vma, sf);
	err = security_mmap_backing_file(vma, sf, file);
	if (err)
		return err;
	return generic_file_readonly_mmap(file, vma);
}

static ssize_t erofs_rs_ishare_splice_read(struct file *in, loff_t *ppos,
					   struct pipe_inode_info *pipe, size_t len,
					   unsigned int flags)
{
	return filemap_splice_read(in->private_data, ppos, pipe, len, flags);
}

static int erofs_rs_ishare_fadvise(struct file *file, loff_t offset, loff_t len, int advice)
{
	return vfs_fadvise(file->private_data, offset, len, advice);
}

static int erofs_rs_ishare_init(void)
{
	struct vfsmount *mnt = kern_mount(&erofs_rs_anon_fs_type);
	int ret;

	if (IS_ERR(mnt))
		return PTR_ERR(mnt);
	/* generic_fadvise() does nothing on noop_backing_dev_info. */
	ret = super_setup_bdi(mnt->mnt_sb);
	if (ret) {
		kern_unmount(mnt);
		return ret;
	}
	erofs_rs_ishare_mnt = mnt;
	return 0;
}

static void erofs_rs_ishare_exit(void)
{
	kern_unmount(erofs_rs_ishare_mnt);
	erofs_rs_ishare_mnt = NULL;
}

static void erofs_rs_evict_inode(struct inode *inode)
{
	erofs_rs_ishare_free_inode(inode);
	truncate_inode_pages_final(&inode->i_data);
	clear_inode(inode);
}

static void erofs_rs_inode_init_once(void *ptr)
{
	struct erofs_rs_inode *vi = ptr;

	inode_init_once(&vi->vfs_inode);
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
static const struct file_operations erofs_rs_ishare_fops = {
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

static void erofs_rs_kill_sb(struct super_block *sb)
{
	void *sbi = sb->s_fs_info;

	/*
	 * File-backed superblocks have an anonymous dev_t (major 0); block-device ones have the
	 * device's, even when opening the device failed and s_bdev is still NULL.
	 */
	if (MAJOR(sb->s_dev))
		kill_block_super(sb);
	else
		kill_anon_super(sb);
	sb->s_fs_info = NULL;
	if (sbi)
		erofs_rs_put_super(sbi);
}

static struct file_system_type erofs_rs_fs_type = {
	.owner		= THIS_MODULE,
	.init_fs_context = erofs_rs_init_fs_context,
	.kill_sb	= erofs_rs_kill_sb,
	.fs_flags	= FS_REQUIRES_DEV | FS_ALLOW_IDMAP,
	.parameters	= erofs_rs_fs_parameters,
};

int erofs_rs_glue_init(size_t info_size)
{
	int err;

	if (info_size > EROFS_RS_INODE_INFO_BYTES)
		return -EINVAL;
	err = erofs_rs_glue_zinit();
	if (err)
		return err;
	erofs_rs_inode_cachep = kmem_cache_create("erofs_rs_inode",
			sizeof(struct erofs_rs_inode), 0,
			SLAB_RECLAIM_ACCOUNT | SLAB_ACCOUNT, erofs_rs_inode_init_once);
	if (!erofs_rs_inode_cachep) {
		erofs_rs_glue_zexit();
		return -ENOMEM;
	}
	err = erofs_rs_ishare_init();
	if (err) {
		kmem_cache_destroy(erofs_rs_inode_cachep);
		erofs_rs_glue_zexit();
		return err;
	}
	erofs_rs_fs_type.name = fstype;
	err = register_filesystem(&erofs_rs_fs_type);
	if (err) {
		erofs_rs_ishare_exit();
		rcu_barrier();
		kmem_cache_destroy(erofs_rs_inode_cachep);
		erofs_rs_glue_zexit();
	}
	return err;
}

void erofs_rs_glue_exit(void)
{
	unregister_filesystem(&erofs_rs_fs_type);
	erofs_rs_ishare_exit();
	/* Make sure all delayed RCU-freed inodes are gone before the cache goes. */
	rcu_barrier();
	kmem_cache_destroy(erofs_rs_inode_cachep);
	erofs_rs_glue_zexit();
}

/* Superblocks. */

void *erofs_rs_glue_sb_info(struct super_block *sb)
{
	return sb->s_fs_info;
}

/* Sets the superblock's constant fields before anything is read; 0 or -errno. */
int erofs_rs_glue_sb_prepare(struct super_block *sb)
{
	sb->s_magic = EROFS_RS_SUPER_MAGIC;
	sb->s_flags |= SB_RDONLY | SB_NOATIME;
	sb->s_maxbytes = MAX_LFS_FILESIZE;
	sb->s_op = &erofs_rs_sops;
	sb->s_xattr = erofs_rs_xattr_handlers;
	sb->s_export_op = &erofs_rs_export_ops;
	sb->s_time_gran = 1;
	if (sb->s_bdev)
		return 0;
	snprintf(sb->s_id, sizeof(sb->s_id), "%u:%u", MAJOR(sb->s_dev), MINOR(sb->s_dev));
	return super_setup_bdi(sb);
}

/* Hands @sbi to the superblock: kill_sb frees it from now on. */
void erofs_rs_glue_sb_attach(struct super_block *sb, void *sbi)
{
	sb->s_fs_info = sbi;
}

/* Sets the block size the superblock declares; 0 or -EINVAL if the device cannot have it. */
int erofs_rs_glue_sb_set_blocksize(struct super_block *sb, unsigned int blkszbits)
{
	if (!sb->s_bdev) {
		sb->s_blocksize = 1UL << blkszbits;
		sb->s_blocksize_bits = blkszbits;
		return 0;
	}
	return sb_set_blocksize(sb, 1U << blkszbits) ? 0 : -EINVAL;
}

void erofs_rs_glue_sb_set_uuid(struct super_block *sb, const u8 *uuid)
{
	super_set_uuid(sb, uuid, 16);
}

/* The page cache that holds the primary device: the bdev's, or the backing file's. */
struct address_space *erofs_rs_glue_sb_mapping(struct super_block *sb, struct file *file)
{
	return file ? file->f_mapping : sb->s_bdev->bd_mapping;
}

/*
 * Reads @len bytes at byte @pos of the superblock's block device straight into @buf, with one
 * synchronous bio. @pos and @len are multiples of 512 and @buf is in the linear map (a folio page
 * or kmalloc memory). Unlike the bdev page cache, this reads the device's last partial page.
 */
int erofs_rs_glue_bdev_read(struct super_block *sb, u64 pos, void *buf, size_t len)
{
	return bdev_rw_virt(sb->s_bdev, pos >> SECTOR_SHIFT, buf, len, REQ_OP_READ);
}

u64 erofs_rs_glue_sb_device_bytes(struct super_block *sb, struct file *file)
{
	return file ? i_size_read(file_inode(file)) : bdev_nr_bytes(sb->s_bdev);
}

int erofs_rs_glue_set_root(struct super_block *sb, struct inode *root)
{
	sb->s_root = d_make_root(root);
	return sb->s_root ? 0 : -ENOMEM;
}

/* Opens an extra device (device=): a block device, or a regular file for file-backed mounts. */
struct file *erofs_rs_glue_open_device(struct super_block *sb, const char *path, bool file_mode)
{
	struct file *file;

	if (file_mode) {
		file = filp_open(path, O_RDONLY | O_LARGEFILE, 0);
		if (!IS_ERR(file) && !S_ISREG(file_inode(file)->i_mode)) {
			fput(file);
			return ERR_PTR(-EINVAL);
		}
		return file;
	}
	file = fs_bdev_file_open_by_path(path, BLK_OPEN_READ, sb->s_type, sb);
	if (file == ERR_PTR(-ENOTBLK))
		return ERR_PTR(-EINVAL);
	return file;
}

/*
 * Reads @len bytes at @pos of a backing file into @buf (inside one page-cache page) with
 * IOCB_DIRECT when the file allows it, as fs/erofs/fileio.c does with `directio`.
 */
ssize_t erofs_rs_glue_file_read_direct(struct file *file, u64 pos, void *buf, size_t len)
{
	struct bio_vec bv;
	struct iov_iter iter;
	struct kiocb kiocb;
	ssize_t ret;

	init_sync_kiocb(&kiocb, file);
	kiocb.ki_pos = pos;
	if (file->f_mode & FMODE_CAN_ODIRECT)
		kiocb.ki_flags |= IOCB_DIRECT;
	bvec_set_page(&bv, virt_to_page(buf), len, offset_in_page(buf));
	iov_iter_bvec(&iter, ITER_DEST, &bv, 1, len);
	scoped_with_creds(file->f_cred)
		ret = vfs_iocb_iter_read(file, &kiocb, &iter);
	return ret;
}

/* Closes an extra device: block devices are unregistered from the superblock, as opened. */
void erofs_rs_glue_release_device(struct file *file, struct super_block *sb)
{
	if (S_ISBLK(file_inode(file)->i_mode))
		fs_bdev_file_release(file, sb);
	else
		fput(file);
}

u64 erofs_rs_glue_file_bytes(struct file *file)
{
	struct inode *inode = file_inode(file);

	return S_ISBLK(inode->i_mode) ? bdev_nr_bytes(file_bdev(file)) : i_size_read(inode);
}

struct address_space *erofs_rs_glue_file_mapping(struct file *file)
{
	return file->f_mapping;
}

void erofs_rs_glue_statfs(struct dentry *dentry, struct kstatfs *buf, u64 blocks, u64 inos)
{
	struct super_block *sb = dentry->d_sb;

	buf->f_type = sb->s_magic;
	buf->f_bsize = sb->s_blocksize;
	buf->f_blocks = blocks;
	buf->f_bfree = buf->f_bavail = 0;
	buf->f_files = ULLONG_MAX;
	buf->f_ffree = ULLONG_MAX - inos;
	buf->f_namelen = EROFS_NAME_LEN;
	if (uuid_is_null(&sb->s_uuid))
		buf->f_fsid = u64_to_fsid(!sb->s_bdev ? 0 : huge_encode_dev(sb->s_bdev->bd_dev));
	else
		buf->f_fsid = uuid_to_fsid(sb->s_uuid.b);
}

u32 erofs_rs_glue_xxh32(const void *p, size_t len, u32 seed)
{
	return xxh32(p, len, seed);
}

u32 erofs_rs_glue_crc32c(u32 crc, const void *p, size_t len)
{
	return crc32c(crc, p, len);
}

/* Inodes. */

/* Returns a referenced inode, locked and new (*is_new set) if it was not cached; NULL on ENOMEM. */
struct inode *erofs_rs_glue_iget_locked(struct super_block *sb, u64 ino, bool *is_new)
{
	struct inode *inode = iget_locked(sb, ino);

	*is_new = inode && (inode_state_read_once(inode) & I_NEW);
	return inode;
}

void *erofs_rs_glue_inode_info(struct inode *inode)
{
	return container_of(inode, struct erofs_rs_inode, vfs_inode)->info;
}

/* Fills the VFS inode from what Rust decoded, and picks the operation tables by file type. */
void erofs_rs_glue_inode_fill(struct inode *inode, umode_t mode, u32 uid, u32 gid, u32 nlink,
			      u64 size, s64 mtime, u32 mtime_nsec, u32 rdev, u64 blocks,
			      bool compressed)
{
	struct timespec64 ts;

	inode->i_mode = mode;
	i_uid_write(inode, uid);
	i_gid_write(inode, gid);
	set_nlink(inode, nlink);
	inode->i_size = size;
	ts = inode_set_mtime(inode, mtime, mtime_nsec);
	inode_set_atime_to_ts(inode, inode_set_ctime_to_ts(inode, ts));
	inode->i_blocks = blocks;

	switch (mode & S_IFMT) {
	case S_IFREG:
		inode->i_op = &erofs_rs_generic_iops;
		inode->i_fop = &erofs_rs_file_fops;
		break;
	case S_IFDIR:
		inode->i_op = &erofs_rs_dir_iops;
		inode->i_fop = &erofs_rs_dir_fops;
		inode_nohighmem(inode);
		break;
	case S_IFLNK:
		inode->i_op = &erofs_rs_symlink_iops;
		inode_nohighmem(inode);
		break;
	default:
		inode->i_op = &erofs_rs_generic_iops;
		init_special_inode(inode, mode, new_decode_dev(rdev));
		return;
	}
	if (compressed) {
		/* Order-0 folios only, for now: zdata.rs fills them page by page. */
		inode->i_mapping->a_ops = &erofs_rs_z_aops;
		return;
	}
	mapping_set_large_folios(inode->i_mapping);
	inode->i_mapping->a_ops = inode->i_sb->s_bdev ? &erofs_rs_iomap_aops : &erofs_rs_aops;
}

/* Dentries. */

const u8 *erofs_rs_glue_dentry_name(struct dentry *dentry, u32 *len)
{
	*len = dentry->d_name.len;
	return dentry->d_name.name;
}

/* Directory iteration. */

bool erofs_rs_glue_dir_emit(struct dir_context *ctx, const u8 *name, u32 len, u64 ino, u8 ftype)
{
	return dir_emit(ctx, name, len, ino, fs_ftype_to_dtype(ftype));
}

bool erofs_rs_glue_dir_emit_dot(struct file *file, struct dir_context *ctx)
{
	return dir_emit_dot(file, ctx);
}

bool erofs_rs_glue_fatal_signal_pending(void)
{
	return fatal_signal_pending(current);
}

void erofs_rs_glue_cond_resched(void)
{
	cond_resched();
}

/* Folios and the page cache. */

struct inode *erofs_rs_glue_folio_inode(struct folio *folio)
{
	return folio->mapping->host;
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

/* Reads page @index of @mapping through its a_ops; a referenced uptodate folio or ERR_PTR. */
struct folio *erofs_rs_glue_read_mapping_folio(struct address_space *mapping, u64 index,
					       struct file *file)
{
	return read_mapping_folio(mapping, index, file);
}

void erofs_rs_glue_folio_put(struct folio *folio)
{
	folio_put(folio);
}

bool erofs_rs_glue_capable_sys_admin(void)
{
	return capable(CAP_SYS_ADMIN);
}

/* Logging, in the C driver's format: "erofs (device vdb): message". */
void erofs_rs_glue_log(struct super_block *sb, bool err, const char *msg, size_t len)
{
	if (err)
		pr_err("erofs_rs (device %s): %.*s\n", sb ? sb->s_id : "?", (int)len, msg);
	else
		pr_info("erofs_rs (device %s): %.*s\n", sb ? sb->s_id : "?", (int)len, msg);
}
