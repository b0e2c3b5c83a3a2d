// SPDX-License-Identifier: GPL-2.0
/*
 * coldread: reads FILE from start to end with read(2) in 1 MiB blocks and prints the
 * CLOCK_MONOTONIC nanoseconds the reads took and the bytes read. bench/icount's lean reader:
 * one static binary, run from tmpfs, so that nothing in the timed window touches the host.
 *
 * coldread -r COUNT FILE: COUNT pread(2)s of 4 KiB instead, at page offsets drawn by a fixed
 * linear congruential generator (the same offsets on every run, for every driver).
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static char buf[1 << 20];

int main(int argc, char **argv)
{
	struct timespec t0, t1;
	long long total = 0, count = -1;
	uint64_t x = 0x9e3779b97f4a7c15ULL;
	const char *path;
	struct stat st;
	ssize_t n = 0;
	int fd;

	if (argc == 4 && !strcmp(argv[1], "-r")) {
		count = atoll(argv[2]);
		path = argv[3];
	} else if (argc == 2) {
		path = argv[1];
	} else {
		fprintf(stderr, "usage: coldread [-r COUNT] FILE\n");
		return 2;
	}
	fd = open(path, O_RDONLY);
	if (fd < 0 || fstat(fd, &st) < 0) {
		perror(path);
		return 1;
	}
	if (count >= 0 && st.st_size < 4096) {
		fprintf(stderr, "%s: smaller than a page\n", path);
		return 1;
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (count < 0) {
		while ((n = read(fd, buf, sizeof(buf))) > 0)
			total += n;
	} else {
		for (long long i = 0; i < count; i++) {
			x = x * 6364136223846793005ULL + 1442695040888963407ULL;
			n = pread(fd, buf, 4096, (off_t)((x >> 33) % (uint64_t)(st.st_size / 4096)) * 4096);
			if (n < 0)
				break;
			total += n;
		}
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	if (n < 0) {
		perror("read");
		return 1;
	}
	printf("%lld %lld\n", (t1.tv_sec - t0.tv_sec) * 1000000000LL + (t1.tv_nsec - t0.tv_nsec), total);
	return 0;
}
