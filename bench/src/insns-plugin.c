// SPDX-License-Identifier: GPL-2.0
/*
 * A QEMU TCG plugin for bench/profile's BENCH_PROFILE_INSNS mode: counts the guest kernel's
 * executed instructions per translation block between two executions of a marker address
 * (a syscall entry that only bench/src/mark.c calls), and writes them when the window closes:
 * one line "PHASE VADDR INSNS-IN-BLOCK EXECUTIONS" per block, PHASE counting the windows from 0.
 * Under -icount the counts are exact, so instructions per function can be compared between
 * the two drivers read after read.
 *
 *   -plugin insns-plugin.so,mark=<hex address>,out=<file>
 *
 * Only the few entry points of the QEMU plugin API it uses are declared here (API version 2
 * and later keep them).
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef uint64_t qemu_plugin_id_t;
typedef struct {
	const char *target_name;
	struct {
		int min, cur;
	} version;
	bool system_emulation;
	union {
		struct {
			int smp_vcpus, max_vcpus;
		} system;
	};
} qemu_info_t;
struct qemu_plugin_tb;
enum qemu_plugin_cb_flags { QEMU_PLUGIN_CB_NO_REGS };
typedef void (*exec_cb_t)(unsigned int vcpu_index, void *userdata);
typedef void (*trans_cb_t)(qemu_plugin_id_t id, struct qemu_plugin_tb *tb);
typedef void (*atexit_cb_t)(qemu_plugin_id_t id, void *userdata);
void qemu_plugin_register_vcpu_tb_trans_cb(qemu_plugin_id_t id, trans_cb_t cb);
void qemu_plugin_register_vcpu_tb_exec_cb(struct qemu_plugin_tb *tb, exec_cb_t cb,
					  enum qemu_plugin_cb_flags flags, void *userdata);
size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb *tb);
uint64_t qemu_plugin_tb_vaddr(const struct qemu_plugin_tb *tb);
void qemu_plugin_register_atexit_cb(qemu_plugin_id_t id, atexit_cb_t cb, void *userdata);

__attribute__((visibility("default"))) int qemu_plugin_version = 2;

/* One translated kernel block; a block translated again gets another record. */
struct blk {
	uint64_t vaddr, insns, count;
	struct blk *next;
};

static struct blk *blocks;
static uint64_t mark;
static bool on;
static int phase;
static FILE *out;

static void dump(void)
{
	for (struct blk *b = blocks; b; b = b->next) {
		if (b->count)
			fprintf(out, "%d %llx %llu %llu\n", phase, (unsigned long long)b->vaddr,
				(unsigned long long)b->insns, (unsigned long long)b->count);
		b->count = 0;
	}
	fflush(out);
}

/* Single-threaded TCG (-icount): the callbacks never run concurrently. */
static void on_mark(unsigned int vcpu, void *u)
{
	if (on)
		dump(), phase++;
	on = !on;
}

static void on_exec(unsigned int vcpu, void *u)
{
	if (on)
		((struct blk *)u)->count++;
}

static void on_trans(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
	uint64_t va = qemu_plugin_tb_vaddr(tb);
	struct blk *b;

	if (va == mark)
		qemu_plugin_register_vcpu_tb_exec_cb(tb, on_mark, QEMU_PLUGIN_CB_NO_REGS, NULL);
	if (va < 0xffff800000000000ULL)
		return;
	b = calloc(1, sizeof(*b));
	if (!b)
		return;
	b->vaddr = va;
	b->insns = qemu_plugin_tb_n_insns(tb);
	b->next = blocks;
	blocks = b;
	qemu_plugin_register_vcpu_tb_exec_cb(tb, on_exec, QEMU_PLUGIN_CB_NO_REGS, b);
}

static void on_atexit(qemu_plugin_id_t id, void *u)
{
	if (out)
		fclose(out);
}

__attribute__((visibility("default"))) int qemu_plugin_install(qemu_plugin_id_t id,
							       const qemu_info_t *info, int argc,
							       char **argv)
{
	const char *path = NULL;

	for (int i = 0; i < argc; i++) {
		if (!strncmp(argv[i], "mark=", 5))
			mark = strtoull(argv[i] + 5, NULL, 16);
		else if (!strncmp(argv[i], "out=", 4))
			path = argv[i] + 4;
	}
	if (!mark || !path || !(out = fopen(path, "w")))
		return -1;
	qemu_plugin_register_vcpu_tb_trans_cb(id, on_trans);
	qemu_plugin_register_atexit_cb(id, on_atexit, NULL);
	return 0;
}
