// SPDX-License-Identifier: GPL-2.0-only
/*
 * erofs_rs glue for compressed files: the kernel services zdata.rs needs and has no Rust
 * binding for. The decompression queues, their bios, the workqueue, the per-CPU kthread
 * workers and the statistics are Rust (vfs/zdata.rs, vfs/bio.rs, vfs/kthread.rs,
 * vfs/cpuhp.rs, vfs/workqueue.rs); what is left here:
 *
 * - one-line wrappers of static inline functions and macros;
 * - the stream decoders' pools, the kernel's LZ4, and the acomp offload (to move next).
 *
 * Nothing here looks at the image: Rust decides what to read and how to decode it.
 */
#include <crypto/acompress.h>
#include <linux/bio.h>
#include <linux/kobject.h>
#include <linux/scatterlist.h>
#include <linux/blkdev.h>
#include <linux/cpuhotplug.h>
#include <linux/debugfs.h>
#include <linux/kthread.h>
#include <linux/lz4.h>
#include <linux/moduleparam.h>
#include <linux/xz.h>
#include <linux/zlib.h>
#include <linux/zstd.h>
#include <linux/pagemap.h>
#include <linux/sched/mm.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/vmalloc.h>
#include <linux/workqueue.h>
#include "glue.h"

/* One-line wrappers of static inline functions and macros, for vfs/zdata.rs and vfs/bio.rs. */

bool erofs_rs_glue_bio_in_atomic(void)
{
	return bio_in_atomic();
}

void erofs_rs_glue_bio_first_folio(struct folio_iter *fi, struct bio *bio)
{
	bio_first_folio(fi, bio, 0);
}

void erofs_rs_glue_bio_next_folio(struct folio_iter *fi, struct bio *bio)
{
	bio_next_folio(fi, bio);
}

unsigned int erofs_rs_glue_memalloc_noio_save(void)
{
	return memalloc_noio_save();
}

void erofs_rs_glue_memalloc_noio_restore(unsigned int flags)
{
	memalloc_noio_restore(flags);
}

u64 erofs_rs_glue_bdev_nr_bytes(struct block_device *bdev)
{
	return bdev_nr_bytes(bdev);
}

void erofs_rs_glue_folio_zero_segment(struct folio *folio, size_t start, size_t end)
{
	folio_zero_segment(folio, start, end);
}

gfp_t erofs_rs_glue_mapping_gfp_mask(struct address_space *mapping)
{
	return mapping_gfp_mask(mapping);
}

/* The kernel's LZ4: decodes exactly `outlen` bytes, stopping early in the input if it may. */
int erofs_rs_glue_lz4_decompress(const void *src, void *dst, int srclen, int outlen, bool partial)
{
	if (partial)
		return LZ4_decompress_safe_partial(src, dst, srclen, outlen, outlen);
	return LZ4_decompress_safe(src, dst, srclen, outlen);
}

/*
 * A page-cache folio of a compressed inode that a read could fill on the side (C:
 * erofs_grab_folio_nowait): locked and not uptodate, or NULL if it is uptodate, busy, or memory
 * is short. The page cache's reference keeps it while it is locked.
 */
struct folio *erofs_rs_glue_grab_folio_nowait(struct inode *inode, u64 index)
{
	struct address_space *as = inode->i_mapping;
	struct folio *folio;

	folio = __filemap_get_folio(as, index, FGP_LOCK | FGP_CREAT | FGP_NOFS | FGP_NOWAIT,
				    readahead_gfp_mask(as) & ~__GFP_RECLAIM);
	if (IS_ERR(folio))
		return NULL;
	if (folio_test_uptodate(folio) || folio_test_large(folio)) {
		folio_unlock(folio);
		folio_put(folio);
		return NULL;
	}
	folio_put(folio);
	return folio;
}

bool erofs_rs_glue_folio_test_uptodate(struct folio *folio)
{
	return folio_test_uptodate(folio);
}

/*
 * Virtually contiguous views of folios, for decoders that need one buffer (C: the vm_map_ram
 * calls of decompressor.c). Order-0 folios only; retried once after flushing lazy unmaps.
 */
void *erofs_rs_glue_vmap_folios(struct folio **folios, unsigned int count)
{
	struct page *stack[16], **pages = stack;
	unsigned int i;
	void *addr;

	if (count > ARRAY_SIZE(stack)) {
		pages = kvmalloc_array(count, sizeof(*pages), GFP_KERNEL);
		if (!pages)
			return NULL;
	}
	for (i = 0; i < count; i++)
		pages[i] = folio_page(folios[i], 0);
	addr = vm_map_ram(pages, count, NUMA_NO_NODE);
	if (!addr) {
		vm_unmap_aliases();
		addr = vm_map_ram(pages, count, NUMA_NO_NODE);
	}
	if (pages != stack)
		kvfree(pages);
	return addr;
}

void erofs_rs_glue_vunmap(void *addr, unsigned int count)
{
	vm_unmap_ram(addr, count);
}

/* Bounce pages: where a decoder writes output that no page-cache folio of the read wants. */
struct folio *erofs_rs_glue_bounce_alloc(void)
{
	return folio_alloc(GFP_KERNEL, 0);
}

/*
 * Stream decoders (C: decompressor_lzma.c, _deflate.c, _zstd.c): a bounded pool of contexts per
 * algorithm, sized for the largest dictionary or window a mounted image declared; a decode
 * waits for a free one. The output and input are whole contiguous buffers here, so one call
 * of each decoder's loop sees all of both.
 */
enum { ZALG_LZMA, ZALG_DEFLATE, ZALG_ZSTD, ZALG_NR };

struct zstream {
	struct zstream *next;
	void *state;		/* xz_dec_microlzma *, zlib workspace, or zstd workspace */
	size_t wkspsz;
	u32 dictsize;
};

struct zpool {
	spinlock_t lock;
	struct zstream *head;
	wait_queue_head_t wq;
	struct mutex resize;
	unsigned int nstrms;	/* streams made so far (all of them, once the pool is set up) */
	u32 maxdict;
};

static unsigned int lzma_streams, deflate_streams, zstd_streams;
module_param(lzma_streams, uint, 0444);
MODULE_PARM_DESC(lzma_streams, "MicroLZMA decoder contexts (default: possible CPUs)");
module_param(deflate_streams, uint, 0444);
MODULE_PARM_DESC(deflate_streams, "DEFLATE decoder contexts (default: possible CPUs)");
module_param(zstd_streams, uint, 0444);
MODULE_PARM_DESC(zstd_streams, "Zstandard decoder contexts (default: possible CPUs)");

static struct zpool zpools[ZALG_NR];

static void zstream_free_state(int alg, struct zstream *s)
{
	if (!s->state)
		return;
	if (alg == ZALG_LZMA)
		xz_dec_microlzma_end(s->state);
	else
		kvfree(s->state);
	s->state = NULL;
}

/* Takes every stream of the pool out of circulation, waiting for busy ones. */
static struct zstream *zpool_isolate_all(struct zpool *p)
{
	struct zstream *all = NULL, *s, *n;
	unsigned int got = 0;

	while (got < p->nstrms) {
		spin_lock(&p->lock);
		s = p->head;
		p->head = NULL;
		spin_unlock(&p->lock);
		for (; s; s = n) {
			n = s->next;
			s->next = all;
			all = s;
			got++;
		}
		if (got < p->nstrms)
			wait_event(p->wq, READ_ONCE(p->head));
	}
	return all;
}

/*
 * Makes the pool of `alg` serve dictionaries (windows) of `dictsize` bytes: at the first mount
 * that needs it, and again when a mount declares a larger one.
 */
int erofs_rs_glue_zalg_config(int alg, u32 dictsize)
{
	struct zpool *p;
	struct zstream *all, *s;
	unsigned int want;
	int err = 0;

	if (alg < 0 || alg >= ZALG_NR)
		return -EINVAL;
	p = &zpools[alg];
	mutex_lock(&p->resize);
	if (p->nstrms && p->maxdict >= dictsize)
		goto out;
	{
		unsigned int *param = alg == ZALG_LZMA ? &lzma_streams :
				      alg == ZALG_DEFLATE ? &deflate_streams : &zstd_streams;

		/* 0 (the default) means one per possible CPU; show the number in use. */
		if (!*param)
			*param = num_possible_cpus();
		want = *param;
	}
	all = zpool_isolate_all(p);
	for (; p->nstrms < want; p->nstrms++) {
		s = kzalloc(sizeof(*s), GFP_KERNEL);
		if (!s)
			break;
		s->next = all;
		all = s;
	}
	for (s = all; s; s = s->next) {
		void *state;
		size_t sz = 0;

		if (s->state && s->dictsize >= dictsize)
			continue;
		switch (alg) {
		case ZALG_LZMA:
			state = xz_dec_microlzma_alloc(XZ_PREALLOC, dictsize);
			break;
		case ZALG_DEFLATE:
			sz = zlib_inflate_workspacesize();
			state = kvmalloc(sz, GFP_KERNEL);
			break;
		default:
			sz = zstd_dstream_workspace_bound(dictsize);
			state = kvmalloc(sz, GFP_KERNEL);
			break;
		}
		if (!state) {
			err = -ENOMEM;
			break;
		}
		zstream_free_state(alg, s);
		s->state = state;
		s->wkspsz = sz;
		s->dictsize = dictsize;
	}
	if (!err)
		p->maxdict = max(p->maxdict, dictsize);
	/* Streams whose state could not grow keep serving the old size only: drop them. */
	spin_lock(&p->lock);
	while (all) {
		s = all;
		all = s->next;
		if (s->state) {
			s->next = p->head;
			p->head = s;
		} else {
			kfree(s);
			p->nstrms--;
		}
	}
	spin_unlock(&p->lock);
	wake_up_all(&p->wq);
	if (!p->nstrms)
		err = -ENOMEM;
out:
	mutex_unlock(&p->resize);
	return err;
}

static struct zstream *zpool_get(struct zpool *p)
{
	struct zstream *s;

	for (;;) {
		spin_lock(&p->lock);
		s = p->head;
		if (s)
			p->head = s->next;
		spin_unlock(&p->lock);
		if (s)
			return s;
		wait_event(p->wq, READ_ONCE(p->head));
	}
}

static void zpool_put(struct zpool *p, struct zstream *s)
{
	spin_lock(&p->lock);
	s->next = p->head;
	p->head = s;
	spin_unlock(&p->lock);
	wake_up(&p->wq);
}

/*
 * Decodes `in` (the compressed stream, padding removed) into exactly `outlen` bytes of `out`.
 * `partial`: the stream may go on past them. Returns 0, -EFSCORRUPTED with *reason set for bad
 * data, or another errno.
 */
int erofs_rs_glue_zalg_decompress(int alg, const void *in, u32 inlen, void *out, u32 outlen,
				  bool partial, const char **reason)
{
	struct zpool *p;
	struct zstream *s;
	int err = 0;

	*reason = NULL;
	if (alg < 0 || alg >= ZALG_NR)
		return -EINVAL;
	p = &zpools[alg];
	if (!READ_ONCE(p->nstrms))
		return -EOPNOTSUPP;
	s = zpool_get(p);
	switch (alg) {
	case ZALG_LZMA: {
		struct xz_buf buf = {
			.in = in, .in_size = inlen, .out = out, .out_size = outlen,
		};
		enum xz_ret xerr;

		xz_dec_microlzma_reset(s->state, inlen, outlen, !partial);
		xerr = xz_dec_microlzma_run(s->state, &buf);
		if (xerr != XZ_STREAM_END || buf.out_pos != outlen) {
			*reason = xerr == XZ_DATA_ERROR ? "corrupted compressed data" : "unexpected end of stream";
			err = -EFSCORRUPTED;
		}
		break;
	}
	case ZALG_DEFLATE: {
		z_stream z = { .workspace = s->state };
		int zerr = zlib_inflateInit2(&z, -MAX_WBITS);

		if (zerr != Z_OK) {
			err = -EINVAL;
			break;
		}
		z.next_in = in;
		z.avail_in = inlen;
		z.next_out = out;
		z.avail_out = outlen;
		zerr = zlib_inflate(&z, Z_SYNC_FLUSH);
		if (z.avail_out || (zerr != Z_STREAM_END && !(zerr == Z_OK && partial))) {
			*reason = zerr == Z_DATA_ERROR ? "corrupted compressed data" : "unexpected end of stream";
			err = -EFSCORRUPTED;
		}
		if (zlib_inflateEnd(&z) != Z_OK && !err)
			err = -EIO;
		break;
	}
	default: {
		zstd_in_buffer ib = { .src = in, .size = inlen, .pos = 0 };
		zstd_out_buffer ob = { .dst = out, .size = outlen, .pos = 0 };
		zstd_dstream *ds = zstd_init_dstream(s->dictsize, s->state, s->wkspsz);
		size_t zerr;

		if (!ds) {
			err = -ENOMEM;
			break;
		}
		do {
			zerr = zstd_decompress_stream(ds, &ob, &ib);
			if (zstd_is_error(zerr)) {
				*reason = zstd_get_error_name(zerr);
				break;
			}
			/* A frame ended (0) or the input ran out before the output was full. */
			if (ob.pos < ob.size && (!zerr || ib.pos == ib.size)) {
				*reason = "unexpected end of stream";
				break;
			}
		} while (ob.pos < ob.size);
		if (*reason)
			err = -EFSCORRUPTED;
		break;
	}
	}
	zpool_put(p, s);
	return err;
}

static void zpools_init(void)
{
	int i;

	for (i = 0; i < ZALG_NR; i++) {
		spin_lock_init(&zpools[i].lock);
		init_waitqueue_head(&zpools[i].wq);
		mutex_init(&zpools[i].resize);
	}
}

/* Module exit: no mount is left, so no stream is busy. */
static void zpools_exit(void)
{
	struct zstream *s;
	int i;

	for (i = 0; i < ZALG_NR; i++) {
		while ((s = zpools[i].head)) {
			zpools[i].head = s->next;
			zstream_free_state(i, s);
			kfree(s);
		}
		zpools[i].nstrms = 0;
	}
}

/*
 * Crypto-API offload of DEFLATE pclusters: Rust (vfs/acomp.rs) owns the transform, its request
 * slots and the counters; here are only the static inline helpers of crypto/acompress.h it
 * calls, and the tables of its debugfs and sysfs files.
 */
void erofs_rs_glue_crypto_free_acomp(struct crypto_acomp *tfm)
{
	crypto_free_acomp(tfm);
}

const char *erofs_rs_glue_crypto_acomp_driver_name(struct crypto_acomp *tfm)
{
	return crypto_acomp_driver_name(tfm);
}

struct acomp_req *erofs_rs_glue_acomp_request_alloc(struct crypto_acomp *tfm)
{
	return acomp_request_alloc(tfm);
}

void erofs_rs_glue_acomp_request_free(struct acomp_req *req)
{
	acomp_request_free(req);
}

void erofs_rs_glue_acomp_request_set_params(struct acomp_req *req, struct scatterlist *src,
					    struct scatterlist *dst, unsigned int slen,
					    unsigned int dlen)
{
	acomp_request_set_params(req, src, dst, slen, dlen);
}

void erofs_rs_glue_acomp_request_set_callback(struct acomp_req *req, u32 flags,
					      void (*cmpl)(void *data, int err), void *data)
{
	acomp_request_set_callback(req, flags, cmpl, data);
}

void erofs_rs_glue_sg_set_folio(struct scatterlist *sg, struct folio *folio, size_t len,
				size_t offset)
{
	sg_set_folio(sg, folio, len, offset);
}

void erofs_rs_glue_folio_get(struct folio *folio)
{
	folio_get(folio);
}

/*
 * /sys/fs/erofs_rs/accel, as the C driver's /sys/fs/erofs/accel: the acomp drivers (one per
 * line; only the first is used) that mounts without decomp_accel= take; empty disables. The
 * name lives in Rust.
 */
static struct kobject *erofs_rs_kobj;
static struct kobj_attribute accel_attr = __ATTR(accel, 0644, erofs_rs_accel_attr_show,
						 erofs_rs_accel_attr_store);

/* Readahead batches. */

struct folio *erofs_rs_glue_readahead_folio(struct readahead_control *rac)
{
	return readahead_folio(rac);
}

u64 erofs_rs_glue_readahead_pos(struct readahead_control *rac)
{
	return readahead_pos(rac);
}

u64 erofs_rs_glue_readahead_length(struct readahead_control *rac)
{
	return readahead_length(rac);
}

void erofs_rs_glue_readahead_expand(struct readahead_control *rac, u64 start, u64 len)
{
	readahead_expand(rac, start, len);
}

struct inode *erofs_rs_glue_readahead_inode(struct readahead_control *rac)
{
	return rac->mapping->host;
}

int erofs_rs_glue_zinit(void)
{
	zpools_init();
	erofs_rs_kobj = kobject_create_and_add("erofs_rs", fs_kobj);
	if (erofs_rs_kobj && sysfs_create_file(erofs_rs_kobj, &accel_attr.attr)) {
		kobject_put(erofs_rs_kobj);
		erofs_rs_kobj = NULL;
	}
	return 0;
}

void erofs_rs_glue_zexit(void)
{
	if (erofs_rs_kobj)
		kobject_put(erofs_rs_kobj);
	zpools_exit();
}
