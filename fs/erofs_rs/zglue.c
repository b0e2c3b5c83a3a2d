// SPDX-License-Identifier: GPL-2.0-only
/*
 * erofs_rs glue for compressed files: one-line wrappers of the static inline functions and
 * macros that the Rust runtime of compressed reads (vfs/zdata.rs, vfs/bio.rs, vfs/acomp.rs)
 * calls and bindgen cannot reach.
 */
#include <crypto/acompress.h>
#include <linux/bio.h>
#include <linux/blkdev.h>
#include <linux/pagemap.h>
#include <linux/scatterlist.h>
#include <linux/sched/mm.h>
#include "glue.h"

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

bool erofs_rs_glue_folio_test_uptodate(struct folio *folio)
{
	return folio_test_uptodate(folio);
}

/* Bounce pages: where a decoder writes output that no page-cache folio of the read wants. */
struct folio *erofs_rs_glue_bounce_alloc(void)
{
	return folio_alloc(GFP_KERNEL, 0);
}

/* crypto/acompress.h, for the DEFLATE offload (vfs/acomp.rs). */
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
