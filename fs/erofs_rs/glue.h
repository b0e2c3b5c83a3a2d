/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * erofs_rs glue: the C side of the boundary between the kernel and the Rust driver.
 *
 * Functions named erofs_rs_glue_*() are C, called from Rust (vfs/ffi.rs declares them).
 * Functions named erofs_rs_*() without "glue" are Rust trampolines (vfs/trampolines.rs),
 * called from the operation tables in glue.c. No function here decides anything about the
 * image: that is Rust's job.
 */
#ifndef __EROFS_RS_GLUE_H
#define __EROFS_RS_GLUE_H

#include <linux/fs.h>

/* Bytes reserved per inode for the Rust `InodeInfo`; Rust checks at init that it fits. */
#define EROFS_RS_INODE_INFO_BYTES	128

/* Rust trampolines. */
int erofs_rs_fill_super(struct super_block *sb, struct file *file, int silent);
void erofs_rs_put_super(void *sbi);
int erofs_rs_statfs(struct dentry *dentry, struct kstatfs *buf);
int erofs_rs_read_folio(struct file *file, struct folio *folio);
int erofs_rs_readdir(struct file *file, struct dir_context *ctx);
struct dentry *erofs_rs_lookup(struct inode *dir, struct dentry *dentry, unsigned int flags);

#endif
