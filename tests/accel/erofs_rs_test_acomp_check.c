// SPDX-License-Identifier: GPL-2.0
/*
 * In-kernel client for erofs_rs_test_acomp, driven from selftest.sh.
 *
 * At load it builds 64 KiB of test data and its raw DEFLATE stream.  Writing
 * a case name to the "run" parameter allocates a tfm by driver name
 * ("erofs_rs_test_deflate"), performs the case and stores the outcome in the
 * read-only last_* parameters:
 *
 *   sg      scatterlist source (odd offset, vmalloc pages) and destination
 *   big     like sg, destination one page larger than the output
 *   virt    virtual addresses, DMA-able (kmalloc), set_{src,dst}_dma
 *   nondma  virtual addresses, vmalloc, set_{src,dst}_nondma
 *   nospc   destination one byte too small
 *   bad     corrupt input (0xff bytes)
 *   trunc   truncated input (first half of the stream)
 *   comp    compress the data with the driver (sg), decompress that (nondma)
 *   onstack ACOMP_REQUEST_ON_STACK request
 *   burst   32 concurrent nondma requests (burst_failed, burst_bad)
 *   lookup  which driver crypto_alloc_acomp("deflate", 0, 0) gets:
 *           last_match is 1 when it is erofs_rs_test_deflate (and the
 *           names are logged); last_touched likewise for the mask
 *           CRYPTO_ALG_ASYNC
 *   orphan  4 requests whose tfm is freed right after submission; they
 *           complete later (orphans_done, orphans_err), e.g. when the driver
 *           module is removed while they are pending
 */

#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <crypto/acompress.h>
#include <linux/atomic.h>
#include <linux/ktime.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/mutex.h>
#include <linux/scatterlist.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/vmalloc.h>
#include <linux/wait.h>
#include <linux/zlib.h>

#define CHK_DRIVER	"erofs_rs_test_deflate"
#define CHK_ORIG_LEN	(64 * 1024)
#define CHK_SRC_OFF	100
#define CHK_FILL	0xa5
#define CHK_BURST	32
#define CHK_ORPHANS	4

static u8 *chk_orig;
static u8 *chk_comp;
static unsigned int chk_clen;
static DEFINE_MUTEX(chk_lock);

static int last_ret;
static int last_err;
static unsigned int last_dlen;
static int last_match;
static int last_touched;
static unsigned int last_ms;
static unsigned int burst_failed;
static unsigned int burst_bad;
static atomic_t orphans_pending;
static atomic_t orphans_done;
static int orphans_err;
static DECLARE_WAIT_QUEUE_HEAD(orphans_wq);

module_param(chk_clen, uint, 0444);
module_param(last_ret, int, 0444);
module_param(last_err, int, 0444);
module_param(last_dlen, uint, 0444);
module_param(last_match, int, 0444);
module_param(last_touched, int, 0444);
module_param(last_ms, uint, 0444);
module_param(burst_failed, uint, 0444);
module_param(burst_bad, uint, 0444);
module_param(orphans_err, int, 0444);

static int chk_atomic_get(char *buffer, const struct kernel_param *kp)
{
	return scnprintf(buffer, PAGE_SIZE, "%d\n",
			 atomic_read((atomic_t *)kp->arg));
}

static const struct kernel_param_ops chk_atomic_ops = {
	.get = chk_atomic_get,
};

module_param_cb(orphans_done, &chk_atomic_ops, &orphans_done, 0444);
module_param_cb(orphans_pending, &chk_atomic_ops, &orphans_pending, 0444);

/* Builds a scatterlist over a vmalloc()ed range, one entry per page piece. */
static struct scatterlist *chk_vmalloc_sg(const u8 *buf, unsigned int len)
{
	unsigned int nents = DIV_ROUND_UP(offset_in_page(buf) + len, PAGE_SIZE);
	struct scatterlist *sg;
	unsigned int i;

	sg = kmalloc_objs(*sg, nents, GFP_KERNEL);
	if (!sg)
		return NULL;
	sg_init_table(sg, nents);
	for (i = 0; i < nents; i++) {
		unsigned int off = offset_in_page(buf);
		unsigned int n = min_t(unsigned int, len, PAGE_SIZE - off);

		sg_set_page(&sg[i], vmalloc_to_page(buf), n, off);
		buf += n;
		len -= n;
	}
	return sg;
}

static void chk_result(const u8 *dst, unsigned int cap, struct acomp_req *req)
{
	last_dlen = req->dlen;
	last_touched = !!memchr_inv(dst, CHK_FILL, cap);
	last_match = req->dlen <= CHK_ORIG_LEN && req->dlen <= cap &&
		     !memcmp(dst, chk_orig, req->dlen);
}

static int chk_wait(struct acomp_req *req, struct crypto_wait *wait)
{
	ktime_t t0 = ktime_get();
	int err;

	last_ret = crypto_acomp_decompress(req);
	err = crypto_wait_req(last_ret, wait);
	last_ms = ktime_ms_delta(ktime_get(), t0);
	return err;
}

/* sg, big, nospc, bad, trunc */
static int chk_run_sg(struct crypto_acomp *tfm, unsigned int slen,
		      unsigned int cap, bool bad)
{
	struct scatterlist *ssg = NULL, *dsg = NULL;
	struct acomp_req *req;
	struct crypto_wait wait;
	u8 *src, *dst;
	int err = -ENOMEM;

	src = vmalloc(CHK_SRC_OFF + chk_clen);
	dst = vmalloc(cap);
	req = acomp_request_alloc(tfm);
	if (!src || !dst || !req)
		goto out;
	if (bad)
		memset(src + CHK_SRC_OFF, 0xff, chk_clen);
	else
		memcpy(src + CHK_SRC_OFF, chk_comp, chk_clen);
	memset(dst, CHK_FILL, cap);
	ssg = chk_vmalloc_sg(src + CHK_SRC_OFF, slen);
	dsg = chk_vmalloc_sg(dst, cap);
	if (!ssg || !dsg)
		goto out;

	crypto_init_wait(&wait);
	acomp_request_set_callback(req, CRYPTO_TFM_REQ_MAY_BACKLOG |
				   CRYPTO_TFM_REQ_MAY_SLEEP,
				   crypto_req_done, &wait);
	acomp_request_set_params(req, ssg, dsg, slen, cap);
	last_err = chk_wait(req, &wait);
	chk_result(dst, cap, req);
	err = 0;
out:
	kfree(dsg);
	kfree(ssg);
	acomp_request_free(req);
	vfree(dst);
	vfree(src);
	return err;
}

/* virt (kmalloc, DMA-able) and nondma (vmalloc) */
static int chk_run_virt(struct crypto_acomp *tfm, bool nondma)
{
	struct acomp_req *req;
	struct crypto_wait wait;
	u8 *src, *dst;
	int err = -ENOMEM;

	src = nondma ? vmalloc(chk_clen) : kmalloc(chk_clen, GFP_KERNEL);
	dst = nondma ? vmalloc(CHK_ORIG_LEN) : kmalloc(CHK_ORIG_LEN, GFP_KERNEL);
	req = acomp_request_alloc(tfm);
	if (!src || !dst || !req)
		goto out;
	memcpy(src, chk_comp, chk_clen);
	memset(dst, CHK_FILL, CHK_ORIG_LEN);

	crypto_init_wait(&wait);
	acomp_request_set_callback(req, CRYPTO_TFM_REQ_MAY_BACKLOG |
				   CRYPTO_TFM_REQ_MAY_SLEEP,
				   crypto_req_done, &wait);
	if (nondma) {
		acomp_request_set_src_nondma(req, src, chk_clen);
		acomp_request_set_dst_nondma(req, dst, CHK_ORIG_LEN);
	} else {
		acomp_request_set_src_dma(req, src, chk_clen);
		acomp_request_set_dst_dma(req, dst, CHK_ORIG_LEN);
	}
	last_err = chk_wait(req, &wait);
	chk_result(dst, CHK_ORIG_LEN, req);
	err = 0;
out:
	acomp_request_free(req);
	kvfree(dst);
	kvfree(src);
	return err;
}

static int chk_run_comp(struct crypto_acomp *tfm)
{
	struct scatterlist *ssg = NULL, *dsg = NULL;
	struct acomp_req *req;
	struct crypto_wait wait;
	u8 *comp, *dst;
	int err = -ENOMEM;

	comp = vmalloc(2 * CHK_ORIG_LEN);
	dst = vmalloc(CHK_ORIG_LEN);
	req = acomp_request_alloc(tfm);
	if (!comp || !dst || !req)
		goto out;
	ssg = chk_vmalloc_sg(chk_orig, CHK_ORIG_LEN);
	dsg = chk_vmalloc_sg(comp, 2 * CHK_ORIG_LEN);
	if (!ssg || !dsg)
		goto out;
	memset(dst, CHK_FILL, CHK_ORIG_LEN);

	crypto_init_wait(&wait);
	acomp_request_set_callback(req, CRYPTO_TFM_REQ_MAY_BACKLOG |
				   CRYPTO_TFM_REQ_MAY_SLEEP,
				   crypto_req_done, &wait);
	acomp_request_set_params(req, ssg, dsg, CHK_ORIG_LEN, 2 * CHK_ORIG_LEN);
	last_err = crypto_wait_req(crypto_acomp_compress(req), &wait);
	if (!last_err) {
		pr_info("compressed %u bytes to %u\n", CHK_ORIG_LEN, req->dlen);
		acomp_request_set_src_nondma(req, comp, req->dlen);
		acomp_request_set_dst_nondma(req, dst, CHK_ORIG_LEN);
		last_err = chk_wait(req, &wait);
		chk_result(dst, CHK_ORIG_LEN, req);
	}
	err = 0;
out:
	kfree(dsg);
	kfree(ssg);
	acomp_request_free(req);
	vfree(dst);
	vfree(comp);
	return err;
}

static int chk_run_onstack(struct crypto_acomp *tfm)
{
	ACOMP_REQUEST_ON_STACK(req, tfm);
	struct crypto_wait wait;
	u8 *dst;

	dst = vmalloc(CHK_ORIG_LEN);
	if (!dst)
		return -ENOMEM;
	memset(dst, CHK_FILL, CHK_ORIG_LEN);
	crypto_init_wait(&wait);
	acomp_request_set_callback(req, CRYPTO_TFM_REQ_MAY_SLEEP,
				   crypto_req_done, &wait);
	acomp_request_set_src_nondma(req, chk_comp, chk_clen);
	acomp_request_set_dst_nondma(req, dst, CHK_ORIG_LEN);
	last_err = chk_wait(req, &wait);
	chk_result(dst, CHK_ORIG_LEN, req);
	vfree(dst);
	return 0;
}

struct chk_burst {
	struct acomp_req *req;
	struct crypto_wait wait;
	u8 *dst;
	int ret;
};

static int chk_run_burst(struct crypto_acomp *tfm)
{
	struct chk_burst *b;
	ktime_t t0;
	int i, err = -ENOMEM;

	b = kzalloc_objs(*b, CHK_BURST, GFP_KERNEL);
	if (!b)
		return -ENOMEM;
	for (i = 0; i < CHK_BURST; i++) {
		b[i].req = acomp_request_alloc(tfm);
		b[i].dst = vmalloc(CHK_ORIG_LEN);
		if (!b[i].req || !b[i].dst)
			goto out;
		crypto_init_wait(&b[i].wait);
		acomp_request_set_callback(b[i].req,
					   CRYPTO_TFM_REQ_MAY_BACKLOG |
					   CRYPTO_TFM_REQ_MAY_SLEEP,
					   crypto_req_done, &b[i].wait);
		acomp_request_set_src_nondma(b[i].req, chk_comp, chk_clen);
		acomp_request_set_dst_nondma(b[i].req, b[i].dst, CHK_ORIG_LEN);
	}

	t0 = ktime_get();
	for (i = 0; i < CHK_BURST; i++)
		b[i].ret = crypto_acomp_decompress(b[i].req);
	burst_failed = 0;
	burst_bad = 0;
	last_err = 0;
	for (i = 0; i < CHK_BURST; i++) {
		int e = crypto_wait_req(b[i].ret, &b[i].wait);

		if (e) {
			burst_failed++;
			last_err = e;
		} else if (b[i].req->dlen != CHK_ORIG_LEN ||
			   memcmp(b[i].dst, chk_orig, CHK_ORIG_LEN)) {
			burst_bad++;
		}
	}
	last_ret = b[0].ret;
	last_ms = ktime_ms_delta(ktime_get(), t0);
	err = 0;
out:
	for (i = 0; i < CHK_BURST; i++) {
		acomp_request_free(b[i].req);
		vfree(b[i].dst);
	}
	kfree(b);
	return err;
}

struct chk_orphan {
	struct acomp_req *req;
	u8 *dst;
};

static void chk_orphan_done(void *data, int err)
{
	struct chk_orphan *o = data;

	if (err == -EINPROGRESS)	/* left the backlog */
		return;
	if (err)
		orphans_err = err;
	else if (o->req->dlen != CHK_ORIG_LEN ||
		 memcmp(o->dst, chk_orig, CHK_ORIG_LEN))
		orphans_err = -EUCLEAN;
	acomp_request_free(o->req);
	vfree(o->dst);
	kfree(o);
	atomic_inc(&orphans_done);
	if (atomic_dec_and_test(&orphans_pending))
		wake_up(&orphans_wq);
}

static int chk_run_orphan(struct crypto_acomp *tfm)
{
	int i, ret;

	orphans_err = 0;
	for (i = 0; i < CHK_ORPHANS; i++) {
		struct chk_orphan *o = kzalloc_obj(*o, GFP_KERNEL);

		if (!o)
			return -ENOMEM;
		o->req = acomp_request_alloc(tfm);
		o->dst = vmalloc(CHK_ORIG_LEN);
		if (!o->req || !o->dst) {
			acomp_request_free(o->req);
			vfree(o->dst);
			kfree(o);
			return -ENOMEM;
		}
		acomp_request_set_callback(o->req, CRYPTO_TFM_REQ_MAY_BACKLOG,
					   chk_orphan_done, o);
		acomp_request_set_src_nondma(o->req, chk_comp, chk_clen);
		acomp_request_set_dst_nondma(o->req, o->dst, CHK_ORIG_LEN);
		atomic_inc(&orphans_pending);
		ret = crypto_acomp_decompress(o->req);
		if (ret != -EINPROGRESS && ret != -EBUSY)
			chk_orphan_done(o, ret);
	}
	last_ret = -EINPROGRESS;
	last_err = 0;
	return 0;
}

static int chk_lookup_is_ours(u32 mask)
{
	struct crypto_acomp *tfm = crypto_alloc_acomp("deflate", 0, mask);
	int ours;

	if (IS_ERR(tfm))
		return PTR_ERR(tfm);
	ours = !strcmp(crypto_acomp_driver_name(tfm), CHK_DRIVER);
	pr_info("\"deflate\" with mask %#x -> %s\n", mask,
		crypto_acomp_driver_name(tfm));
	crypto_free_acomp(tfm);
	return ours;
}

static int chk_run_lookup(void)
{
	last_match = chk_lookup_is_ours(0);
	last_touched = chk_lookup_is_ours(CRYPTO_ALG_ASYNC);
	return 0;
}

static int chk_run(const char *val, const struct kernel_param *kp)
{
	struct crypto_acomp *tfm;
	char mode[16];
	int err;

	strscpy(mode, val, sizeof(mode));
	strim(mode);

	tfm = crypto_alloc_acomp(CHK_DRIVER, 0, 0);
	if (IS_ERR(tfm))
		return PTR_ERR(tfm);
	if (strcmp(crypto_acomp_driver_name(tfm), CHK_DRIVER)) {
		crypto_free_acomp(tfm);
		return -ENOENT;
	}

	mutex_lock(&chk_lock);
	last_ret = 0;
	last_err = 0;
	last_match = 0;
	last_touched = 0;
	last_dlen = 0;
	last_ms = 0;
	if (!strcmp(mode, "sg"))
		err = chk_run_sg(tfm, chk_clen, CHK_ORIG_LEN, false);
	else if (!strcmp(mode, "big"))
		err = chk_run_sg(tfm, chk_clen, CHK_ORIG_LEN + PAGE_SIZE, false);
	else if (!strcmp(mode, "nospc"))
		err = chk_run_sg(tfm, chk_clen, CHK_ORIG_LEN - 1, false);
	else if (!strcmp(mode, "bad"))
		err = chk_run_sg(tfm, chk_clen, CHK_ORIG_LEN, true);
	else if (!strcmp(mode, "trunc"))
		err = chk_run_sg(tfm, chk_clen / 2, CHK_ORIG_LEN, false);
	else if (!strcmp(mode, "virt"))
		err = chk_run_virt(tfm, false);
	else if (!strcmp(mode, "nondma"))
		err = chk_run_virt(tfm, true);
	else if (!strcmp(mode, "comp"))
		err = chk_run_comp(tfm);
	else if (!strcmp(mode, "onstack"))
		err = chk_run_onstack(tfm);
	else if (!strcmp(mode, "burst"))
		err = chk_run_burst(tfm);
	else if (!strcmp(mode, "lookup"))
		err = chk_run_lookup();
	else if (!strcmp(mode, "orphan"))
		err = chk_run_orphan(tfm);
	else
		err = -EINVAL;
	mutex_unlock(&chk_lock);

	/* For "orphan", requests may still be pending: that is the point. */
	crypto_free_acomp(tfm);
	return err;
}

static const struct kernel_param_ops chk_run_ops = {
	.set = chk_run,
};

module_param_cb(run, &chk_run_ops, NULL, 0200);

static int __init chk_init(void)
{
	struct z_stream_s s = {};
	int ret;

	chk_orig = vmalloc(CHK_ORIG_LEN);
	chk_comp = vmalloc(2 * CHK_ORIG_LEN);
	s.workspace = vmalloc(zlib_deflate_workspacesize(-MAX_WBITS,
							 MAX_MEM_LEVEL));
	if (!chk_orig || !chk_comp || !s.workspace) {
		ret = -ENOMEM;
		goto err;
	}

	/* Half text, half pseudo-random bytes: compresses to about 60%. */
	{
		u32 x = 12345;
		unsigned int i;

		for (i = 0; i < CHK_ORIG_LEN; i++) {
			x = x * 1103515245 + 12345;
			chk_orig[i] = (i / 256) & 1 ? x >> 24 :
				      "erofs_rs acomp check "[i % 21];
		}
	}

	ret = -EINVAL;
	if (zlib_deflateInit2(&s, Z_BEST_COMPRESSION, Z_DEFLATED, -MAX_WBITS,
			      MAX_MEM_LEVEL, Z_DEFAULT_STRATEGY) != Z_OK)
		goto err;
	s.next_in = chk_orig;
	s.avail_in = CHK_ORIG_LEN;
	s.next_out = chk_comp;
	s.avail_out = 2 * CHK_ORIG_LEN;
	if (zlib_deflate(&s, Z_FINISH) != Z_STREAM_END) {
		zlib_deflateEnd(&s);
		goto err;
	}
	chk_clen = s.total_out;
	zlib_deflateEnd(&s);
	vfree(s.workspace);
	return 0;
err:
	vfree(s.workspace);
	vfree(chk_comp);
	vfree(chk_orig);
	return ret;
}

static void __exit chk_exit(void)
{
	wait_event(orphans_wq, !atomic_read(&orphans_pending));
	vfree(chk_comp);
	vfree(chk_orig);
}

module_init(chk_init);
module_exit(chk_exit);

MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("Test client for erofs_rs_test_acomp");
