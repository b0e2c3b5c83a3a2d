// SPDX-License-Identifier: GPL-2.0
/*
 * A QEMU TCG plugin for bench/parallel: counts the guest instructions each vCPU executes
 * (kernel and user, a whole translation block at a time, inline: one add per block, no
 * callback) and, at each execution of a marker address (a syscall entry that only
 * bench/src/mark.c calls, as for bench/src/insns-plugin.c), opens or closes a window; when a
 * window closes it writes one line "WINDOW INSNS-VCPU0 INSNS-VCPU1 ..." (WINDOW counting from
 * 0): what each vCPU executed between the two marks.
 *
 *   -plugin vcpu-insns-plugin.so,mark=<hex address>,out=<file>
 *
 * Multi-threaded TCG: the counters are per vCPU (a scoreboard), each written by its own vCPU's
 * thread only; the marking vCPU reads the others' as they run, so a window's edges are exact
 * for the marking vCPU and within one translation block for the others. A block counts whole
 * when it starts, also if an exception leaves it early.
 *
 * Only the few entry points of the QEMU plugin API it uses are declared here (API version 4:
 * QEMU 9.2 and later keep them).
 */
#include <stdbool.h>
#include <stddef.h>
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
struct qemu_plugin_scoreboard;
typedef struct {
	struct qemu_plugin_scoreboard *score;
	size_t offset;
} qemu_plugin_u64;
enum qemu_plugin_cb_flags { QEMU_PLUGIN_CB_NO_REGS, QEMU_PLUGIN_CB_R_REGS };
enum qemu_plugin_op { QEMU_PLUGIN_INLINE_ADD_U64, QEMU_PLUGIN_INLINE_STORE_U64 };
typedef void (*exec_cb_t)(unsigned int vcpu_index, void *userdata);
typedef void (*trans_cb_t)(qemu_plugin_id_t id, struct qemu_plugin_tb *tb);
typedef void (*atexit_cb_t)(qemu_plugin_id_t id, void *userdata);
void qemu_plugin_register_vcpu_tb_trans_cb(qemu_plugin_id_t id, trans_cb_t cb);
void qemu_plugin_register_vcpu_tb_exec_cb(struct qemu_plugin_tb *tb, exec_cb_t cb,
					  enum qemu_plugin_cb_flags flags, void *userdata);
void qemu_plugin_register_vcpu_tb_exec_inline_per_vcpu(struct qemu_plugin_tb *tb,
						       enum qemu_plugin_op op,
						       qemu_plugin_u64 entry, uint64_t imm);
struct qemu_plugin_scoreboard *qemu_plugin_scoreboard_new(size_t element_size);
uint64_t qemu_plugin_u64_get(qemu_plugin_u64 entry, unsigned int vcpu_index);
int qemu_plugin_num_vcpus(void);
size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb *tb);
uint64_t qemu_plugin_tb_vaddr(const struct qemu_plugin_tb *tb);
void qemu_plugin_register_atexit_cb(qemu_plugin_id_t id, atexit_cb_t cb, void *userdata);

__attribute__((visibility("default"))) int qemu_plugin_version = 4;

#define MAX_VCPUS 64

static qemu_plugin_u64 insns;
static uint64_t mark;
static uint64_t start[MAX_VCPUS];
static int nvcpus;
static bool on;
static int window;
static FILE *out;

/*
 * The guest runs one marker at a time (mark, read, mark), so two vCPUs never run this at once.
 */
static void on_mark(unsigned int vcpu, void *u)
{
	int n = qemu_plugin_num_vcpus();

	if (n > nvcpus)
		n = nvcpus;
	if (!on) {
		for (int i = 0; i < n; i++)
			start[i] = qemu_plugin_u64_get(insns, i);
	} else {
		fprintf(out, "%d", window++);
		for (int i = 0; i < nvcpus; i++)
			fprintf(out, " %llu",
				i < n ? (unsigned long long)(qemu_plugin_u64_get(insns, i) - start[i])
				      : 0ULL);
		fputc('\n', out);
		fflush(out);
	}
	on = !on;
}

static void on_trans(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
	qemu_plugin_register_vcpu_tb_exec_inline_per_vcpu(tb, QEMU_PLUGIN_INLINE_ADD_U64, insns,
							  qemu_plugin_tb_n_insns(tb));
	if (qemu_plugin_tb_vaddr(tb) == mark)
		qemu_plugin_register_vcpu_tb_exec_cb(tb, on_mark, QEMU_PLUGIN_CB_NO_REGS, NULL);
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
	if (!info->system_emulation || info->system.smp_vcpus < 1 ||
	    info->system.smp_vcpus > MAX_VCPUS)
		return -1;
	nvcpus = info->system.smp_vcpus;
	if (!mark || !path || !(out = fopen(path, "w")))
		return -1;
	insns = (qemu_plugin_u64){ qemu_plugin_scoreboard_new(sizeof(uint64_t)), 0 };
	qemu_plugin_register_vcpu_tb_trans_cb(id, on_trans);
	qemu_plugin_register_atexit_cb(id, on_atexit, NULL);
	return 0;
}
