// SPDX-License-Identifier: GPL-2.0
/*
 * coldread: reads FILE from start to end with read(2) in 1 MiB blocks and prints the
 * CLOCK_MONOTONIC nanoseconds the reads took and the bytes read. bench/icount's lean reader:
 * one static binary, run from tmpfs, so that nothing in the timed window touches the host.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static char buf[1 << 20];

int main(int argc, char **argv)
{
	struct timespec t0, t1;
	long long total = 0;
	ssize_t n;
	int fd;

	if (argc != 2) {
		fprintf(stderr, "usage: coldread FILE\n");
		return 2;
	}
	fd = open(argv[1], O_RDONLY);
	if (fd < 0) {
		perror(argv[1]);
		return 1;
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		total += n;
	clock_gettime(CLOCK_MONOTONIC, &t1);
	if (n < 0) {
		perror("read");
		return 1;
	}
	printf("%lld %lld\n", (t1.tv_sec - t0.tv_sec) * 1000000000LL + (t1.tv_nsec - t0.tv_nsec), total);
	return 0;
}
