// SPDX-License-Identifier: GPL-2.0
/*
 * Test-only "deflate" acomp driver with fault injection, for exercising the
 * hardware-offload (decomp_accel=) path of erofs_rs without hardware.
 *
 * Registers cra_name "deflate", cra_driver_name "erofs_rs_test_deflate".
 * Decompression is raw DEFLATE (zlib, windowBits -MAX_WBITS).  The request is
 * linearized: the source is copied into a bounce buffer (unless it is a
 * virtual address), inflated into a bounce buffer of req->dlen bytes, and the
 * output is copied to the destination only on success, so the destination is
 * never written when a request fails.
 *
 * Fault injection (module parameters, writable at run time):
 *   fail_every=N     every Nth decompression request fails with -EIO
 *   corrupt_every=N  every Nth request succeeds with req->dlen one byte short
 *   delay_ms=M       complete asynchronously (-EINPROGRESS) after M ms
 * Writing fail_every or corrupt_every restarts its count, so after
 * "echo 3 > fail_every" the 3rd, 6th, ... requests from then on fail.
 *
 * Counters (read-only parameters): requests, failed, completed_async,
 * in_flight, injected_fail, injected_short.
 */

#include <crypto/internal/acompress.h>
#include <crypto/scatterwalk.h>
#include <linux/atomic.h>
#include <linux/bottom_half.h>
#include <linux/jiffies.h>
#include <linux/kernel.h>
#include <linux/list.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/string.h>
#include <linux/workqueue.h>
#include <linux/zlib.h>

#define TACOMP_DRIVER_NAME	"erofs_rs_test_deflate"

/* The same compression parameters as crypto/deflate.c (deflate-generic). */
#define TACOMP_COMP_LEVEL	Z_DEFAULT_COMPRESSION
#define TACOMP_COMP_WINBITS	11
#define TACOMP_COMP_MEMLEVEL	MAX_MEM_LEVEL

/* ---- fault injection knobs ---------------------------------------------- */

struct tacomp_knob {
	unsigned int every;	/* 0: never */
	atomic_t seq;		/* requests seen since @every was last written */
};

static struct tacomp_knob fail_knob;
static struct tacomp_knob corrupt_knob;
static unsigned int delay_ms;

static int tacomp_knob_set(const char *val, const struct kernel_param *kp)
{
	struct tacomp_knob *knob = kp->arg;
	unsigned int every;
	int err;

	err = kstrtouint(val, 0, &every);
	if (err)
		return err;
	atomic_set(&knob->seq, 0);
	WRITE_ONCE(knob->every, every);
	return 0;
}

static int tacomp_knob_get(char *buffer, const struct kernel_param *kp)
{
	const struct tacomp_knob *knob = kp->arg;

	return scnprintf(buffer, PAGE_SIZE, "%u\n", READ_ONCE(knob->every));
}

static const struct kernel_param_ops tacomp_knob_ops = {
	.set = tacomp_knob_set,
	.get = tacomp_knob_get,
};

/* Returns true when this request is the Nth one since the knob was set. */
static bool tacomp_knob_fires(struct tacomp_knob *knob)
{
	unsigned int every = READ_ONCE(knob->every);
	unsigned int n = atomic_inc_return(&knob->seq);

	return every && n % every == 0;
}

module_param_cb(fail_every, &tacomp_knob_ops, &fail_knob, 0644);
MODULE_PARM_DESC(fail_every,
		 "Every Nth decompression request fails with -EIO (0: never)");
module_param_cb(corrupt_every, &tacomp_knob_ops, &corrupt_knob, 0644);
MODULE_PARM_DESC(corrupt_every,
		 "Every Nth decompression request returns 0 with req->dlen one byte short (0: never)");
module_param(delay_ms, uint, 0644);
MODULE_PARM_DESC(delay_ms,
		 "0: complete synchronously; else return -EINPROGRESS and complete after this many ms");

/* ---- counters ------------------------------------------------------------ */

static atomic_t stat_requests;
static atomic_t stat_failed;
static atomic_t stat_completed_async;
static atomic_t stat_in_flight;
static atomic_t stat_injected_fail;
static atomic_t stat_injected_short;

static int tacomp_counter_set(const char *val, const struct kernel_param *kp)
{
	return -EPERM;
}

static int tacomp_counter_get(char *buffer, const struct kernel_param *kp)
{
	return scnprintf(buffer, PAGE_SIZE, "%u\n",
			 (unsigned int)atomic_read((atomic_t *)kp->arg));
}

static const struct kernel_param_ops tacomp_counter_ops = {
	.set = tacomp_counter_set,
	.get = tacomp_counter_get,
};

#define TACOMP_COUNTER(name, desc)					\
	module_param_cb(name, &tacomp_counter_ops, &stat_##name, 0444);	\
	MODULE_PARM_DESC(name, desc)

TACOMP_COUNTER(requests, "Decompression requests received");
TACOMP_COUNTER(failed, "Decompression requests finished with an error");
TACOMP_COUNTER(completed_async,
	       "Decompression requests finished through the completion callback");
TACOMP_COUNTER(in_flight, "Decompression requests received but not finished");
TACOMP_COUNTER(injected_fail, "Requests failed with -EIO by fail_every");
TACOMP_COUNTER(injected_short, "Requests shortened by corrupt_every");

/* ---- per-request state (the acomp request context) ---------------------- */

enum tacomp_fault {
	TACOMP_FAULT_NONE,
	TACOMP_FAULT_FAIL,
	TACOMP_FAULT_SHORT,
};

struct tacomp_req_ctx {
	struct acomp_req *req;
	struct delayed_work dwork;
	struct list_head node;		/* on tacomp_pending */
	enum tacomp_fault fault;
};

static struct workqueue_struct *tacomp_wq;
static LIST_HEAD(tacomp_pending);
static DEFINE_SPINLOCK(tacomp_pending_lock);

/* ---- linearization helpers ------------------------------------------------ */

static gfp_t tacomp_gfp(struct acomp_req *req)
{
	return (req->base.flags & CRYPTO_TFM_REQ_MAY_SLEEP) ?
	       GFP_KERNEL : GFP_ATOMIC;
}

/* Returns the source as one linear buffer; *bounce is to be kvfree()d. */
static const u8 *tacomp_get_src(struct acomp_req *req, gfp_t gfp,
				void **bounce)
{
	*bounce = NULL;
	if (acomp_request_src_isvirt(req))
		return req->svirt;

	*bounce = kvmalloc(req->slen, gfp);
	if (!*bounce)
		return NULL;
	memcpy_from_sglist(*bounce, req->src, 0, req->slen);
	return *bounce;
}

static void tacomp_put_dst(struct acomp_req *req, const void *buf,
			   unsigned int len)
{
	if (acomp_request_dst_isvirt(req))
		memcpy(req->dvirt, buf, len);
	else
		memcpy_to_sglist(req->dst, 0, buf, len);
}

/* ---- decompression -------------------------------------------------------- */

/*
 * Inflates the whole request.  On success the output is copied to the
 * destination and its length returned in *outlen; on failure the destination
 * is untouched.
 */
static int tacomp_inflate(struct acomp_req *req, gfp_t gfp,
			  unsigned int *outlen)
{
	struct z_stream_s stream = {};
	void *sbounce, *dbuf;
	const u8 *src;
	int zret, err;

	if (!req->slen || !req->dlen || !req->svirt || !req->dvirt)
		return -EINVAL;

	stream.workspace = kvmalloc(zlib_inflate_workspacesize(), gfp);
	if (!stream.workspace)
		return -ENOMEM;

	err = -ENOMEM;
	src = tacomp_get_src(req, gfp, &sbounce);
	if (!src)
		goto out_ws;
	dbuf = kvmalloc(req->dlen, gfp);
	if (!dbuf)
		goto out_src;

	err = -EINVAL;
	if (zlib_inflateInit2(&stream, -MAX_WBITS) != Z_OK)
		goto out_dst;

	stream.next_in = src;
	stream.avail_in = req->slen;
	stream.next_out = dbuf;
	stream.avail_out = req->dlen;
	zret = zlib_inflate(&stream, Z_FINISH);
	if (zret == Z_STREAM_END) {
		*outlen = stream.total_out;
		tacomp_put_dst(req, dbuf, *outlen);
		err = 0;
	} else if ((zret == Z_OK || zret == Z_BUF_ERROR) && !stream.avail_out) {
		/* The stream has more output than the destination holds. */
		err = -ENOSPC;
	} else {
		/* Corrupt (Z_DATA_ERROR) or truncated (input exhausted). */
		err = -EINVAL;
	}
	zlib_inflateEnd(&stream);
out_dst:
	kvfree(dbuf);
out_src:
	kvfree(sbounce);
out_ws:
	kvfree(stream.workspace);
	return err;
}

/* Performs a request whose fault was decided at submission; sets req->dlen. */
static int tacomp_do_decompress(struct acomp_req *req, enum tacomp_fault fault,
				gfp_t gfp)
{
	unsigned int outlen;
	int err;

	if (fault == TACOMP_FAULT_FAIL) {
		atomic_inc(&stat_injected_fail);
		err = -EIO;
		goto out;
	}

	err = tacomp_inflate(req, gfp, &outlen);
	if (err)
		goto out;

	if (fault == TACOMP_FAULT_SHORT && outlen) {
		atomic_inc(&stat_injected_short);
		outlen--;
	}
	req->dlen = outlen;
out:
	if (err)
		atomic_inc(&stat_failed);
	return err;
}

/* Runs a pending asynchronous request and calls its completion callback. */
static void tacomp_finish_async(struct acomp_req *req)
{
	struct tacomp_req_ctx *ctx = acomp_request_ctx(req);
	int err;

	err = tacomp_do_decompress(req, ctx->fault, GFP_KERNEL);
	atomic_inc(&stat_completed_async);
	atomic_dec(&stat_in_flight);

	/* Like cryptd: callbacks run with BHs off, as from a softirq. */
	local_bh_disable();
	acomp_request_complete(req, err);
	local_bh_enable();
}

static void tacomp_work(struct work_struct *work)
{
	struct tacomp_req_ctx *ctx =
		container_of(to_delayed_work(work), struct tacomp_req_ctx, dwork);

	spin_lock_bh(&tacomp_pending_lock);
	list_del(&ctx->node);
	spin_unlock_bh(&tacomp_pending_lock);

	tacomp_finish_async(ctx->req);
}

static int tacomp_decompress(struct acomp_req *req)
{
	struct tacomp_req_ctx *ctx = acomp_request_ctx(req);
	enum tacomp_fault fault = TACOMP_FAULT_NONE;
	unsigned int delay = READ_ONCE(delay_ms);
	bool fail, corrupt;
	int err;

	atomic_inc(&stat_requests);
	atomic_inc(&stat_in_flight);

	/* Both counts advance on every request; -EIO wins over a short one. */
	fail = tacomp_knob_fires(&fail_knob);
	corrupt = tacomp_knob_fires(&corrupt_knob);
	if (fail)
		fault = TACOMP_FAULT_FAIL;
	else if (corrupt)
		fault = TACOMP_FAULT_SHORT;

	if (!delay) {
		err = tacomp_do_decompress(req, fault, tacomp_gfp(req));
		atomic_dec(&stat_in_flight);
		return err;
	}

	ctx->req = req;
	ctx->fault = fault;
	INIT_DELAYED_WORK(&ctx->dwork, tacomp_work);
	spin_lock_bh(&tacomp_pending_lock);
	list_add_tail(&ctx->node, &tacomp_pending);
	queue_delayed_work(tacomp_wq, &ctx->dwork, msecs_to_jiffies(delay));
	spin_unlock_bh(&tacomp_pending_lock);
	return -EINPROGRESS;
}

/* ---- compression (synchronous, no fault injection) ----------------------- */

static int tacomp_compress(struct acomp_req *req)
{
	gfp_t gfp = tacomp_gfp(req);
	struct z_stream_s stream = {};
	void *sbounce, *dbuf;
	const u8 *src;
	int zret, err;

	if (!req->slen || !req->dlen || !req->svirt || !req->dvirt)
		return -EINVAL;

	stream.workspace =
		kvmalloc(zlib_deflate_workspacesize(-TACOMP_COMP_WINBITS,
						    TACOMP_COMP_MEMLEVEL), gfp);
	if (!stream.workspace)
		return -ENOMEM;

	err = -ENOMEM;
	src = tacomp_get_src(req, gfp, &sbounce);
	if (!src)
		goto out_ws;
	dbuf = kvmalloc(req->dlen, gfp);
	if (!dbuf)
		goto out_src;

	err = -EINVAL;
	if (zlib_deflateInit2(&stream, TACOMP_COMP_LEVEL, Z_DEFLATED,
			      -TACOMP_COMP_WINBITS, TACOMP_COMP_MEMLEVEL,
			      Z_DEFAULT_STRATEGY) != Z_OK)
		goto out_dst;

	stream.next_in = src;
	stream.avail_in = req->slen;
	stream.next_out = dbuf;
	stream.avail_out = req->dlen;
	zret = zlib_deflate(&stream, Z_FINISH);
	if (zret == Z_STREAM_END) {
		req->dlen = stream.total_out;
		tacomp_put_dst(req, dbuf, req->dlen);
		err = 0;
	} else if (zret == Z_OK || zret == Z_BUF_ERROR) {
		err = -ENOSPC;
	}
	zlib_deflateEnd(&stream);
out_dst:
	kvfree(dbuf);
out_src:
	kvfree(sbounce);
out_ws:
	kvfree(stream.workspace);
	return err;
}

/* ---- registration ---------------------------------------------------------- */

static struct acomp_alg tacomp_alg = {
	.compress		= tacomp_compress,
	.decompress		= tacomp_decompress,
	.base.cra_name		= "deflate",
	.base.cra_driver_name	= TACOMP_DRIVER_NAME,
	/*
	 * The lowest priority the API accepts (negative ones are refused).
	 * deflate-generic is also 0; see the README about ties.
	 */
	.base.cra_priority	= 0,
	/*
	 * ASYNC: requests may complete through the callback (delay_ms).  The
	 * API then also allocates a synchronous "deflate" fallback tfm per tfm
	 * (deflate-generic).  REQ_VIRT: virtual-address requests, DMA-able or
	 * not, are passed to this driver as they are instead of being turned
	 * into scatterlists or diverted to that fallback.
	 */
	.base.cra_flags		= CRYPTO_ALG_ASYNC | CRYPTO_ALG_REQ_VIRT,
	.base.cra_reqsize	= sizeof(struct tacomp_req_ctx),
	.base.cra_module	= THIS_MODULE,
};

static int __init tacomp_init(void)
{
	int err;

	tacomp_wq = alloc_workqueue("erofs_rs_test_acomp",
				    WQ_UNBOUND | WQ_MEM_RECLAIM, 0);
	if (!tacomp_wq)
		return -ENOMEM;

	err = crypto_register_acomp(&tacomp_alg);
	if (err) {
		destroy_workqueue(tacomp_wq);
		return err;
	}
	return 0;
}

static void __exit tacomp_exit(void)
{
	struct tacomp_req_ctx *ctx, *next;
	LIST_HEAD(expedite);

	crypto_unregister_acomp(&tacomp_alg);

	/*
	 * Every tfm holds a module reference, so requests can only still be
	 * pending here if their tfm was freed before they completed.  Finish
	 * them now rather than after their delay: take over the ones whose
	 * work has not started; the running ones are waited for by
	 * destroy_workqueue().
	 */
	spin_lock_bh(&tacomp_pending_lock);
	list_for_each_entry_safe(ctx, next, &tacomp_pending, node)
		if (cancel_delayed_work(&ctx->dwork))
			list_move_tail(&ctx->node, &expedite);
	spin_unlock_bh(&tacomp_pending_lock);

	list_for_each_entry_safe(ctx, next, &expedite, node) {
		list_del(&ctx->node);
		tacomp_finish_async(ctx->req);
	}

	destroy_workqueue(tacomp_wq);
	WARN_ON(!list_empty(&tacomp_pending));
}

module_init(tacomp_init);
module_exit(tacomp_exit);

MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("erofs_rs test acomp deflate driver with fault injection");
MODULE_ALIAS_CRYPTO(TACOMP_DRIVER_NAME);
