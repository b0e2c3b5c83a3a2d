/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * erofs_rs's tracepoints, in the erofs_rs trace system: the C driver's events
 * (include/trace/events/erofs.h in Linux 7.3) with the same names, fields and output, and the
 * events it lacks (erofs_rs_decompress, erofs_rs_accel). The Rust driver fires them through
 * vfs/trace.rs, which tests each tracepoint's static key before calling its
 * rust_do_trace_<event>() (CREATE_RUST_TRACE_POINTS, fs/erofs_rs/trace.c); the C driver's
 * struct inode, erofs_inode and erofs_map_blocks arguments become the values it read from
 * them, so that the records and their format files are the C driver's.
 */
#undef TRACE_SYSTEM
#define TRACE_SYSTEM erofs_rs

#if !defined(_TRACE_EROFS_RS_H) || defined(TRACE_HEADER_MULTI_READ)
#define _TRACE_EROFS_RS_H

#include <linux/tracepoint.h>
#include <linux/fs.h>

/* The C driver's types (fs/erofs/internal.h), named as its format files name them. */
#ifndef EROFS_RS_TRACE_TYPES
#define EROFS_RS_TRACE_TYPES
typedef u64 erofs_nid_t;
typedef u64 erofs_off_t;
typedef u64 erofs_blk_t;
#endif

#define show_dev(dev)		MAJOR(dev), MINOR(dev)
#define show_dev_nid(entry)	show_dev(entry->dev), entry->nid

#define show_file_type(type)						\
	__print_symbolic(type,						\
		{ 0,		"FILE" },				\
		{ 1,		"DIR" })

/* EROFS_GET_BLOCKS_* and EROFS_MAP_* of fs/erofs/internal.h (erofs_core::map has the same). */
#define show_map_flags(flags) __print_flags(flags, "|",	\
	{ 0x0001,	"FIEMAP" },	\
	{ 0x0002,	"READMORE" },	\
	{ 0x0004,	"FINDTAIL" })

#define show_mflags(flags) __print_flags(flags, "",	\
	{ 0x0001,	"M" },		\
	{ 0x0002,	"I" },		\
	{ 0x0004,	"T" },		\
	{ 0x0008,	"P" },		\
	{ 0x0010,	"R" })

TRACE_EVENT(erofs_lookup,
	TP_PROTO(dev_t dev, erofs_nid_t pnid, const struct dentry *dentry, unsigned int flags),
	TP_ARGS(dev, pnid, dentry, flags),
	TP_STRUCT__entry(
		__field(dev_t,		dev	)
		__field(erofs_nid_t,	nid	)
		__string(name,		dentry->d_name.name	)
		__field(unsigned int,	flags	)
	),
	TP_fast_assign(
		__entry->dev	= dev;
		__entry->nid	= pnid;
		__assign_str(name);
		__entry->flags	= flags;
	),
	TP_printk("dev = (%d,%d), pnid = %llu, name:%s, flags:%x",
		show_dev_nid(__entry),
		__get_str(name),
		__entry->flags)
);

TRACE_EVENT(erofs_fill_inode,
	TP_PROTO(dev_t dev, erofs_nid_t nid, erofs_blk_t blkaddr, unsigned int ofs),
	TP_ARGS(dev, nid, blkaddr, ofs),
	TP_STRUCT__entry(
		__field(dev_t,		dev	)
		__field(erofs_nid_t,	nid	)
		__field(erofs_blk_t,	blkaddr )
		__field(unsigned int,	ofs	)
	),
	TP_fast_assign(
		__entry->dev		= dev;
		__entry->nid		= nid;
		__entry->blkaddr	= blkaddr;
		__entry->ofs		= ofs;
	),
	TP_printk("dev = (%d,%d), nid = %llu, blkaddr %llu ofs %u",
		  show_dev_nid(__entry),
		  __entry->blkaddr, __entry->ofs)
);

TRACE_EVENT(erofs_read_folio,
	TP_PROTO(dev_t dev, erofs_nid_t nid, int dir, pgoff_t index, unsigned int order, bool raw),
	TP_ARGS(dev, nid, dir, index, order, raw),
	TP_STRUCT__entry(
		__field(dev_t,		dev	)
		__field(erofs_nid_t,    nid     )
		__field(int,		dir	)
		__field(pgoff_t,	index	)
		__field(unsigned int,	order	)
		__field(bool,		raw	)
	),
	TP_fast_assign(
		__entry->dev	= dev;
		__entry->nid	= nid;
		__entry->dir	= dir;
		__entry->index	= index;
		__entry->order	= order;
		__entry->raw	= raw;
	),
	TP_printk("dev = (%d,%d), nid = %llu, %s, index = %lu, order = %u, raw = %d",
		show_dev_nid(__entry),
		show_file_type(__entry->dir),
		(unsigned long)__entry->index,
		__entry->order,
		__entry->raw)
);

TRACE_EVENT(erofs_readahead,
	TP_PROTO(dev_t dev, erofs_nid_t nid, pgoff_t start, unsigned int nrpage, bool raw),
	TP_ARGS(dev, nid, start, nrpage, raw),
	TP_STRUCT__entry(
		__field(dev_t,		dev	)
		__field(erofs_nid_t,	nid	)
		__field(pgoff_t,	start	)
		__field(unsigned int,	nrpage	)
		__field(bool,		raw	)
	),
	TP_fast_assign(
		__entry->dev	= dev;
		__entry->nid	= nid;
		__entry->start	= start;
		__entry->nrpage	= nrpage;
		__entry->raw	= raw;
	),
	TP_printk("dev = (%d,%d), nid = %llu, start = %lu nrpage = %u raw = %d",
		show_dev_nid(__entry),
		(unsigned long)__entry->start,
		__entry->nrpage,
		__entry->raw)
);

TRACE_EVENT(erofs_map_blocks_enter,
	TP_PROTO(dev_t dev, erofs_nid_t nid, erofs_off_t la, u64 llen, unsigned int flags),
	TP_ARGS(dev, nid, la, llen, flags),
	TP_STRUCT__entry(
		__field(	dev_t,		dev		)
		__field(	erofs_nid_t,	nid		)
		__field(	erofs_off_t,	la		)
		__field(	u64,		llen		)
		__field(	unsigned int,	flags		)
	),
	TP_fast_assign(
		__entry->dev    = dev;
		__entry->nid    = nid;
		__entry->la	= la;
		__entry->llen	= llen;
		__entry->flags	= flags;
	),
	TP_printk("dev = (%d,%d), nid = %llu, la %llu llen %llu flags %s",
		  show_dev_nid(__entry),
		  __entry->la, __entry->llen,
		  __entry->flags ? show_map_flags(__entry->flags) : "NULL")
);

TRACE_EVENT(erofs_map_blocks_exit,
	TP_PROTO(dev_t dev, erofs_nid_t nid, unsigned int flags, erofs_off_t la, erofs_off_t pa,
		 u64 llen, u64 plen, unsigned int mflags, int ret),
	TP_ARGS(dev, nid, flags, la, pa, llen, plen, mflags, ret),
	TP_STRUCT__entry(
		__field(	dev_t,		dev		)
		__field(	erofs_nid_t,	nid		)
		__field(        unsigned int,   flags           )
		__field(	erofs_off_t,	la		)
		__field(	erofs_off_t,	pa		)
		__field(	u64,		llen		)
		__field(	u64,		plen		)
		__field(        unsigned int,	mflags		)
		__field(	int,		ret		)
	),
	TP_fast_assign(
		__entry->dev    = dev;
		__entry->nid    = nid;
		__entry->flags	= flags;
		__entry->la	= la;
		__entry->pa	= pa;
		__entry->llen	= llen;
		__entry->plen	= plen;
		__entry->mflags	= mflags;
		__entry->ret	= ret;
	),
	TP_printk("dev = (%d,%d), nid = %llu, flags %s "
		  "la %llu pa %llu llen %llu plen %llu mflags %s ret %d",
		  show_dev_nid(__entry),
		  __entry->flags ? show_map_flags(__entry->flags) : "NULL",
		  __entry->la, __entry->pa, __entry->llen, __entry->plen,
		  show_mflags(__entry->mflags), __entry->ret)
);

/*
 * Not in the C driver: one decompression run (a queue of pclusters decoded together) of a
 * mount: where it ran (inline in the reader, on the workqueue, on a per-CPU kthread, or on
 * the workqueue because the kthread was gone), its pclusters, their compressed and decoded
 * bytes, how long it waited from the last bio's completion, and how long decoding took.
 */
#define show_placement(p)						\
	__print_symbolic(p,						\
		{ 0,	"inline" },					\
		{ 1,	"workqueue" },					\
		{ 2,	"kthread" },					\
		{ 3,	"kthread_fallback" },				\
		{ 4,	"completion" })

TRACE_EVENT(erofs_rs_decompress,
	TP_PROTO(dev_t dev, unsigned int placement, unsigned int pclusters, u64 in_bytes,
		 u64 out_bytes, u64 queued_ns, u64 decode_ns),
	TP_ARGS(dev, placement, pclusters, in_bytes, out_bytes, queued_ns, decode_ns),
	TP_STRUCT__entry(
		__field(dev_t,		dev		)
		__field(unsigned int,	placement	)
		__field(unsigned int,	pclusters	)
		__field(u64,		in_bytes	)
		__field(u64,		out_bytes	)
		__field(u64,		queued_ns	)
		__field(u64,		decode_ns	)
	),
	TP_fast_assign(
		__entry->dev		= dev;
		__entry->placement	= placement;
		__entry->pclusters	= pclusters;
		__entry->in_bytes	= in_bytes;
		__entry->out_bytes	= out_bytes;
		__entry->queued_ns	= queued_ns;
		__entry->decode_ns	= decode_ns;
	),
	TP_printk("dev = (%d,%d), %s, pclusters %u in %llu out %llu queued_ns %llu decode_ns %llu",
		  show_dev(__entry->dev), show_placement(__entry->placement),
		  __entry->pclusters, __entry->in_bytes, __entry->out_bytes,
		  __entry->queued_ns, __entry->decode_ns)
);

/*
 * Not in the C driver: the crypto-API offload of one DEFLATE pcluster: submitted to the acomp
 * engine, completed by it (err is its result), or decoded in software after the engine
 * refused or failed it (fallback).
 */
#define show_accel_op(op)						\
	__print_symbolic(op,						\
		{ 0,	"submit" },					\
		{ 1,	"complete" },					\
		{ 2,	"fallback" })

TRACE_EVENT(erofs_rs_accel,
	TP_PROTO(unsigned int op, u64 in_bytes, u64 out_bytes, int err),
	TP_ARGS(op, in_bytes, out_bytes, err),
	TP_STRUCT__entry(
		__field(unsigned int,	op		)
		__field(u64,		in_bytes	)
		__field(u64,		out_bytes	)
		__field(int,		err		)
	),
	TP_fast_assign(
		__entry->op		= op;
		__entry->in_bytes	= in_bytes;
		__entry->out_bytes	= out_bytes;
		__entry->err		= err;
	),
	TP_printk("%s in %llu out %llu err %d", show_accel_op(__entry->op),
		  __entry->in_bytes, __entry->out_bytes, __entry->err)
);

#endif /* _TRACE_EROFS_RS_H */

/* This part must be outside protection. */
#include <trace/define_trace.h>
