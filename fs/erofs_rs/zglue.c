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
 * Crypto-API offload of DEFLATE pclusters (C: decompressor_crypto.c, the Intel QAT path): one
 * acomp transform per mount, with a fixed set of request slots whose scatterlists are reused;
 * a reader submits several pclusters and waits for them in file order. Rust decides which
 * pclusters go, and decodes in software whatever the engine refuses or fails.
 */
#define ACCEL_SLOTS	16

struct erofs_rs_aslot {
	struct list_head node;
	struct erofs_rs_accel *a;
	struct acomp_req *req;
	struct scatterlist *src, *dst;
	unsigned int src_cap, dst_cap;	/* entries */
	unsigned int nin, nout;		/* folios referenced while in flight */
	struct completion done;
	int status;
	unsigned int dlen;
};

struct erofs_rs_accel {
	struct crypto_acomp *tfm;
	spinlock_t lock;
	struct list_head free;
	atomic64_t offloaded, fallback, errors, bytes_in, bytes_out;
	struct dentry *dbg;
	struct erofs_rs_aslot slots[ACCEL_SLOTS];
};

static int accel_show(struct seq_file *m, void *unused)
{
	struct erofs_rs_accel *a = m->private;

	seq_printf(m, "driver %s\noffloaded %lld\nfallback %lld\nerrors %lld\nbytes_in %lld\nbytes_out %lld\n",
		   crypto_acomp_driver_name(a->tfm), atomic64_read(&a->offloaded),
		   atomic64_read(&a->fallback), atomic64_read(&a->errors),
		   atomic64_read(&a->bytes_in), atomic64_read(&a->bytes_out));
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(accel);

void erofs_rs_glue_accel_close(struct erofs_rs_accel *a)
{
	int i;

	if (!a)
		return;
	debugfs_remove(a->dbg);
	for (i = 0; i < ACCEL_SLOTS; i++) {
		acomp_request_free(a->slots[i].req);
		kfree(a->slots[i].src);
		kfree(a->slots[i].dst);
	}
	crypto_free_acomp(a->tfm);
	kfree(a);
}

/*
 * Opens acomp driver `name` (an algorithm or driver name, e.g. "qat_deflate" or "deflate") for
 * a mount; its counters go into the mount's debugfs directory. NULL (with a message) if the
 * driver is missing: the mount then decompresses in software.
 */
struct erofs_rs_accel *erofs_rs_glue_accel_open(struct dentry *dir, const char *name,
					       unsigned int windowbits)
{
	struct erofs_rs_accel *a = kzalloc(sizeof(*a), GFP_KERNEL);
	int i;

	if (!a)
		return NULL;
	spin_lock_init(&a->lock);
	INIT_LIST_HEAD(&a->free);
	a->tfm = crypto_alloc_acomp(name, 0, 0);
	if (IS_ERR(a->tfm)) {
		pr_warn("erofs_rs: acomp driver %s unavailable (%ld): DEFLATE decodes in software\n",
			name, PTR_ERR(a->tfm));
		kfree(a);
		return NULL;
	}
	/*
	 * The kernel's software driver inflates with 2 KiB windows (crypto/deflate.c,
	 * DEFLATE_DEF_WINBITS 11): a stream with longer back-references is not for it (on 7.3,
	 * feeding it one faults in zlib_inflate).
	 */
	if (!strcmp(crypto_acomp_driver_name(a->tfm), "deflate-generic") && windowbits > 11) {
		pr_warn("erofs_rs: %s inflates with 2 KiB windows, this image's DEFLATE uses %u KiB: DEFLATE decodes in software\n",
			crypto_acomp_driver_name(a->tfm), (1U << windowbits) >> 10);
		crypto_free_acomp(a->tfm);
		kfree(a);
		return NULL;
	}
	for (i = 0; i < ACCEL_SLOTS; i++) {
		struct erofs_rs_aslot *sl = &a->slots[i];

		sl->a = a;
		sl->req = acomp_request_alloc(a->tfm);
		if (!sl->req) {
			erofs_rs_glue_accel_close(a);
			return NULL;
		}
		init_completion(&sl->done);
		list_add_tail(&sl->node, &a->free);
	}
	if (dir)
		a->dbg = debugfs_create_file("accel", 0444, dir, a, &accel_fops);
	return a;
}

static void accel_done(void *data, int err)
{
	struct erofs_rs_aslot *sl = data;

	if (err == -EINPROGRESS)	/* left the backlog: the real completion follows */
		return;
	sl->status = err;
	sl->dlen = sl->req->dlen;
	complete(&sl->done);
}

/* Fills `*sgp` (grown if needed) with `len` bytes of the order-0 folios from byte `off`. */
static int accel_sg(struct scatterlist **sgp, unsigned int *cap, struct folio **folios,
		    unsigned int n, unsigned int off, unsigned int len)
{
	struct scatterlist *sg;
	unsigned int i, ents = 0;

	if (n > *cap) {
		sg = kmalloc_array(n, sizeof(*sg), GFP_NOIO);
		if (!sg)
			return -ENOMEM;
		kfree(*sgp);
		*sgp = sg;
		*cap = n;
	}
	sg = *sgp;
	sg_init_table(sg, n);
	for (i = 0; i < n && len; i++) {
		unsigned int o = i ? 0 : off, l = min_t(unsigned int, PAGE_SIZE - o, len);

		if (o >= PAGE_SIZE)
			return -EINVAL;
		sg_set_page(&sg[i], folio_page(folios[i], 0), l, o);
		len -= l;
		ents = i + 1;
	}
	/* Exactly the folios given, each used: the wait drops one reference per entry. */
	if (len || ents != n || !ents)
		return -EINVAL;
	sg_mark_end(&sg[ents - 1]);
	return 0;
}

/*
 * Starts decoding `inlen` bytes of the input folios (from byte `in_off` of the first) into
 * `outlen` bytes of the output folios (from byte `out_off`). Returns the slot in flight, or
 * NULL if no slot is free or the request could not be set up (decode in software then).
 */
struct erofs_rs_aslot *erofs_rs_glue_accel_submit(struct erofs_rs_accel *a,
		struct folio **in, unsigned int nin, unsigned int in_off, unsigned int inlen,
		struct folio **out, unsigned int nout, unsigned int out_off, unsigned int outlen)
{
	struct erofs_rs_aslot *sl;
	unsigned int i;
	int ret;

	spin_lock(&a->lock);
	sl = list_first_entry_or_null(&a->free, struct erofs_rs_aslot, node);
	if (sl)
		list_del(&sl->node);
	spin_unlock(&a->lock);
	if (!sl)
		return NULL;
	if (accel_sg(&sl->src, &sl->src_cap, in, nin, in_off, inlen) ||
	    accel_sg(&sl->dst, &sl->dst_cap, out, nout, out_off, outlen)) {
		spin_lock(&a->lock);
		list_add(&sl->node, &a->free);
		spin_unlock(&a->lock);
		return NULL;
	}
	/* The engine may write the pages after our caller unlocks a neighbour: keep them. */
	for (i = 0; i < nin; i++)
		folio_get(in[i]);
	for (i = 0; i < nout; i++)
		folio_get(out[i]);
	sl->nin = nin;
	sl->nout = nout;
	reinit_completion(&sl->done);
	sl->status = -EINPROGRESS;
	acomp_request_set_params(sl->req, sl->src, sl->dst, inlen, outlen);
	acomp_request_set_callback(sl->req, CRYPTO_TFM_REQ_MAY_BACKLOG, accel_done, sl);
	atomic64_inc(&a->offloaded);
	atomic64_add(inlen, &a->bytes_in);
	ret = crypto_acomp_decompress(sl->req);
	if (ret != -EINPROGRESS && ret != -EBUSY) {
		/* Completed (or failed) synchronously: the callback is not called. */
		sl->status = ret;
		sl->dlen = sl->req->dlen;
		complete(&sl->done);
	}
	return sl;
}

/*
 * Waits for a submitted slot and frees it. 0 if exactly `outlen` bytes were produced, else
 * the error (counted): the caller then decodes the pcluster in software.
 */
int erofs_rs_glue_accel_wait(struct erofs_rs_aslot *sl, unsigned int outlen)
{
	struct erofs_rs_accel *a = sl->a;
	struct scatterlist *sg;
	unsigned int i;
	int ret;

	wait_for_completion_io(&sl->done);
	for_each_sg(sl->src, sg, sl->nin, i)
		folio_put(page_folio(sg_page(sg)));
	for_each_sg(sl->dst, sg, sl->nout, i)
		folio_put(page_folio(sg_page(sg)));
	ret = sl->status;
	if (!ret && sl->dlen != outlen)
		ret = -EIO;
	if (ret)
		atomic64_inc(&a->errors);
	else
		atomic64_add(outlen, &a->bytes_out);
	spin_lock(&a->lock);
	list_add(&sl->node, &a->free);
	spin_unlock(&a->lock);
	return ret;
}

/* Counts a pcluster that was meant for the engine but decoded in software. */
void erofs_rs_glue_accel_fallback(struct erofs_rs_accel *a)
{
	atomic64_inc(&a->fallback);
}

/*
 * /sys/fs/erofs_rs/accel, as the C driver's /sys/fs/erofs/accel: the acomp drivers (one per
 * line; only the first is used) that mounts without decomp_accel= take; empty disables.
 */
static DEFINE_MUTEX(accel_name_lock);
static char accel_name[CRYPTO_MAX_ALG_NAME];
static struct kobject *erofs_rs_kobj;

static ssize_t accel_attr_show(struct kobject *kobj, struct kobj_attribute *attr, char *buf)
{
	ssize_t n;

	mutex_lock(&accel_name_lock);
	n = accel_name[0] ? sysfs_emit(buf, "%s\n", accel_name) : 0;
	mutex_unlock(&accel_name_lock);
	return n;
}

static ssize_t accel_attr_store(struct kobject *kobj, struct kobj_attribute *attr,
				const char *buf, size_t len)
{
	size_t n = strcspn(buf, "\n");

	if (n >= sizeof(accel_name))
		return -EINVAL;
	mutex_lock(&accel_name_lock);
	memcpy(accel_name, buf, n);
	accel_name[n] = '\0';
	mutex_unlock(&accel_name_lock);
	return len;
}

static struct kobj_attribute accel_attr = __ATTR(accel, 0644, accel_attr_show, accel_attr_store);

/* The global accelerator name, copied into `buf` (empty if none). */
void erofs_rs_glue_accel_default(char *buf, size_t len)
{
	mutex_lock(&accel_name_lock);
	strscpy(buf, accel_name, len);
	mutex_unlock(&accel_name_lock);
}

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
