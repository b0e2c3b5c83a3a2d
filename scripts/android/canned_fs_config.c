// SPDX-License-Identifier: GPL-2.0
/*
 * A small stand-in for Android's libcutils canned_fs_config and fs_config, so that mkfs.erofs
 * built WITH_ANDROID on a Debian host takes --fs-config-file as Android's build does
 * (scripts/setup builds it as mkfs.erofs-android). The format is libcutils': one line per path,
 * "PATH UID GID MODE [capabilities=0xN] [other=...]", PATH relative to the image's root with the
 * mount point in front ("system/bin/sh"), MODE in octal, a line starting with a space for the
 * root itself; the last line for a path wins, and a path with no line is an error that stops
 * mkfs, as libcutils does. fs_config (no file given) answers root, 0755 or 0644.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <private/canned_fs_config.h>
#include <private/fs_config.h>

struct entry {
	char *path;
	unsigned int uid, gid, mode;
	uint64_t capabilities;
};

static struct entry *entries;
static size_t nentries;

int load_canned_fs_config(const char *fn)
{
	FILE *f = fopen(fn, "r");
	char *line = NULL;
	size_t cap = 0, lineno = 0;

	if (!f) {
		fprintf(stderr, "canned_fs_config: %s: %s\n", fn, strerror(errno));
		return -1;
	}
	while (getline(&line, &cap, f) > 0) {
		char *save = NULL, *tok, *p = line;
		struct entry e = { 0 };
		int field = 0;

		lineno++;
		line[strcspn(line, "\n")] = '\0';
		if (!*line)
			continue;
		/* Historical: the root directory may be written as a leading space. */
		if (*line == ' ')
			e.path = strdup("");
		for (tok = strtok_r(p, " ", &save); tok; tok = strtok_r(NULL, " ", &save)) {
			int idx = field + (*line == ' ');

			field++;
			switch (idx) {
			case 0: e.path = strdup(tok[0] == '/' ? tok + 1 : tok); break;
			case 1: e.uid = strtoul(tok, NULL, 10); break;
			case 2: e.gid = strtoul(tok, NULL, 10); break;
			case 3: e.mode = strtoul(tok, NULL, 8); break;
			default:
				if (!strncmp(tok, "capabilities=", 13))
					e.capabilities = strtoull(tok + 13, NULL, 0);
				/* Other attributes (selabel=...) are not for mkfs. */
				break;
			}
		}
		if (field + (*line == ' ') < 4 || !e.path) {
			fprintf(stderr, "canned_fs_config: %s:%zu: ill-formed line\n", fn, lineno);
			fclose(f);
			return -1;
		}
		entries = realloc(entries, (nentries + 1) * sizeof(*entries));
		if (!entries) {
			fclose(f);
			return -1;
		}
		entries[nentries++] = e;
	}
	free(line);
	fclose(f);
	return 0;
}

void canned_fs_config(const char *path, int dir, const char *target_out_path, unsigned int *uid,
		      unsigned int *gid, unsigned int *mode, uint64_t *capabilities)
{
	size_t i;

	(void)dir;
	(void)target_out_path;
	if (path[0] == '/')
		path++;
	for (i = nentries; i-- > 0;) {
		if (!strcmp(entries[i].path, path)) {
			*uid = entries[i].uid;
			*gid = entries[i].gid;
			*mode = entries[i].mode;
			*capabilities = entries[i].capabilities;
			return;
		}
	}
	fprintf(stderr, "failed to find [%s] in canned fs_config\n", path);
	exit(1);
}

void fs_config(const char *path, int dir, const char *target_out_path, unsigned int *uid,
	       unsigned int *gid, unsigned int *mode, uint64_t *capabilities)
{
	(void)path;
	(void)target_out_path;
	*uid = 0;
	*gid = 0;
	*mode = dir ? 0755 : 0644;
	*capabilities = 0;
}
