// SPDX-License-Identifier: GPL-2.0
/*
 * A QEMU TCG plugin for bench/profile's BENCH_PROFILE_INSNS mode: counts the guest kernel's
 * executed instructions per translation block between two executions of a marker address
 * (a syscall entry that only bench/src/mark.c calls), and writes them when the window closes:
 * one line "PHASE VADDR INSNS-IN-BLOCK EXECUTIONS" per block, PHASE counting the windows from 0.
 * Under -icount the counts are exact, so instructions per function can be compared between
 * the two drivers read after read.
 *
 * With watch=<hex address> (up to 32 of them: function entries), it also records who calls
 * those functions: at each entry it reads the return address on the stack and the third
 * argument (%rdx: the length of memcpy and memset), and writes one line
 * "C PHASE FUNCTION CALLER CALLS SUM-OF-RDX" per function and caller.
 *
 *   -plugin insns-plugin.so,mark=<hex address>,out=<file>[,watch=<hex address>...]
 *
 * Only the few entry points of the QEMU plugin API it uses are declared here (API version 4,
 * QEMU 9.2, and later keep them; glib's arrays as QEMU passes them).
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
enum qemu_plugin_cb_flags { QEMU_PLUGIN_CB_NO_REGS, QEMU_PLUGIN_CB_R_REGS };
typedef void (*exec_cb_t)(unsigned int vcpu_index, void *userdata);
typedef void (*trans_cb_t)(qemu_plugin_id_t id, struct qemu_plugin_tb *tb);
typedef void (*atexit_cb_t)(qemu_plugin_id_t id, void *userdata);
void qemu_plugin_register_vcpu_tb_trans_cb(qemu_plugin_id_t id, trans_cb_t cb);
void qemu_plugin_register_vcpu_tb_exec_cb(struct qemu_plugin_tb *tb, exec_cb_t cb,
					  enum qemu_plugin_cb_flags flags, void *userdata);
size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb *tb);
uint64_t qemu_plugin_tb_vaddr(const struct qemu_plugin_tb *tb);
void qemu_plugin_register_atexit_cb(qemu_plugin_id_t id, atexit_cb_t cb, void *userdata);
typedef void (*vcpu_init_cb_t)(qemu_plugin_id_t id, unsigned int vcpu_index);
void qemu_plugin_register_vcpu_init_cb(qemu_plugin_id_t id, vcpu_init_cb_t cb);
typedef struct {
	char *data;
	unsigned int len;
} GArray;
typedef struct {
	unsigned char *data;
	unsigned int len;
} GByteArray;
GByteArray *g_byte_array_new(void);
GByteArray *g_byte_array_set_size(GByteArray *array, unsigned int length);
struct qemu_plugin_register;
typedef struct {
	struct qemu_plugin_register *handle;
	const char *name;
	const char *feature;
} qemu_plugin_reg_descriptor;
GArray *qemu_plugin_get_registers(void);
int qemu_plugin_read_register(struct qemu_plugin_register *handle, GByteArray *buf);
bool qemu_plugin_read_memory_vaddr(uint64_t addr, GByteArray *data, size_t len);

__attribute__((visibility("default"))) int qemu_plugin_version = 4;

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

/* watch=: the functions whose callers are recorded, and the records. */
static uint64_t watch[32];
static int nwatch;
struct call {
	uint64_t fn, caller, calls, rdx;
	struct call *next;
};
static struct call *calls;
static struct qemu_plugin_register *reg_rsp, *reg_rdx;
static GByteArray *scratch;

static void dump(void)
{
	for (struct blk *b = blocks; b; b = b->next) {
		if (b->count)
			fprintf(out, "%d %llx %llu %llu\n", phase, (unsigned long long)b->vaddr,
				(unsigned long long)b->insns, (unsigned long long)b->count);
		b->count = 0;
	}
	for (struct call *c = calls; c; c = c->next) {
		if (c->calls)
			fprintf(out, "C %d %llx %llx %llu %llu\n", phase, (unsigned long long)c->fn,
				(unsigned long long)c->caller, (unsigned long long)c->calls,
				(unsigned long long)c->rdx);
		c->calls = c->rdx = 0;
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

static uint64_t read_reg(struct qemu_plugin_register *r)
{
	uint64_t v = 0;

	g_byte_array_set_size(scratch, 0);
	if (qemu_plugin_read_register(r, scratch) >= 8)
		memcpy(&v, scratch->data, 8);
	return v;
}

static void on_call(unsigned int vcpu, void *u)
{
	uint64_t fn = (uint64_t)(uintptr_t)u, sp, ret = 0, rdx;
	struct call *c;

	if (!on || !scratch)
		return;
	sp = read_reg(reg_rsp);
	rdx = read_reg(reg_rdx);
	g_byte_array_set_size(scratch, 0);
	if (qemu_plugin_read_memory_vaddr(sp, scratch, 8))
		memcpy(&ret, scratch->data, 8);
	for (c = calls; c; c = c->next)
		if (c->fn == fn && c->caller == ret)
			break;
	if (!c) {
		c = calloc(1, sizeof(*c));
		if (!c)
			return;
		c->fn = fn;
		c->caller = ret;
		c->next = calls;
		calls = c;
	}
	c->calls++;
	c->rdx += rdx;
}

/* The register handles, found once (they are the same for every vCPU of one guest). */
static void on_vcpu_init(qemu_plugin_id_t id, unsigned int vcpu)
{
	GArray *regs;
	qemu_plugin_reg_descriptor *d;

	if (scratch)
		return;
	regs = qemu_plugin_get_registers();
	d = (qemu_plugin_reg_descriptor *)regs->data;
	for (unsigned int i = 0; i < regs->len; i++) {
		if (!strcmp(d[i].name, "rsp"))
			reg_rsp = d[i].handle;
		else if (!strcmp(d[i].name, "rdx"))
			reg_rdx = d[i].handle;
	}
	if (reg_rsp && reg_rdx)
		scratch = g_byte_array_new();
}

static void on_trans(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
	uint64_t va = qemu_plugin_tb_vaddr(tb);
	struct blk *b;

	if (va == mark)
		qemu_plugin_register_vcpu_tb_exec_cb(tb, on_mark, QEMU_PLUGIN_CB_NO_REGS, NULL);
	if (va < 0xffff800000000000ULL)
		return;
	for (int i = 0; i < nwatch; i++)
		if (va == watch[i])
			qemu_plugin_register_vcpu_tb_exec_cb(tb, on_call, QEMU_PLUGIN_CB_R_REGS,
							     (void *)(uintptr_t)va);
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
		else if (!strncmp(argv[i], "watch=", 6) && nwatch < 32)
			watch[nwatch++] = strtoull(argv[i] + 6, NULL, 16);
		else if (!strncmp(argv[i], "out=", 4))
			path = argv[i] + 4;
	}
	if (!mark || !path || !(out = fopen(path, "w")))
		return -1;
	qemu_plugin_register_vcpu_tb_trans_cb(id, on_trans);
	if (nwatch)
		qemu_plugin_register_vcpu_init_cb(id, on_vcpu_init);
	qemu_plugin_register_atexit_cb(id, on_atexit, NULL);
	return 0;
}
