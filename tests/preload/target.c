/* target: a test program for the preload suite. Its "GPU" is the fake driver; it answers one line
 * per command read from stdin, so a test script can drive it:
 *   verify | write | kernel MS | gpu | fork | map FILE | ping | quit
 * With --no-cuda it never initialises the fake driver, like a shell script or a data loader. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <fcntl.h>
#include <sys/mman.h>

#include "fakecuda.h"

#define SIZE (1u << 20)

static unsigned char pattern(size_t i)
{
	return (unsigned char)(((i * 2654435761u) >> 13) ^ 0x5a);
}

static int fill(void)
{
	static unsigned char buf[SIZE];

	for (size_t i = 0; i < SIZE; i++)
		buf[i] = pattern(i);
	return fake_memcpy_htod(0, buf, SIZE) == CUDA_SUCCESS ? 0 : -1;
}

static int verify(void)
{
	static unsigned char buf[SIZE];

	if (fake_memcpy_dtoh(buf, 0, SIZE) != CUDA_SUCCESS)
		return -1;
	for (size_t i = 0; i < SIZE; i++)
		if (buf[i] != pattern(i))
			return -1;
	return 0;
}

static void *idle(void *arg)
{
	for (;;)
		pause();
	return arg;
}

int main(int argc, char **argv)
{
	int cuda = !(argc > 1 && strcmp(argv[1], "--no-cuda") == 0);
	char line[128];

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (cuda && (fake_register() != CUDA_SUCCESS || fill() < 0)) {
		printf("init failed\n");
		return 1;
	}
	printf("ready %d\n", (int)getpid());
	while (fgets(line, sizeof(line), stdin)) {
		if (strncmp(line, "verify", 6) == 0) {
			printf("verify %s\n", verify() == 0 ? "ok" : "bad");
		} else if (strncmp(line, "write", 5) == 0) {
			printf("write %s\n", fill() == 0 ? "ok" : "bad");
		} else if (strncmp(line, "kernel ", 7) == 0) {
			fake_launch((unsigned)atoi(line + 7));
			printf("kernel ok\n");
		} else if (strncmp(line, "gpu", 3) == 0) {
			printf("gpu %d\n", fake_current_gpu());
		} else if (strncmp(line, "fork", 4) == 0) {
			pid_t c = fork();

			if (c == 0) {
				for (int i = 0; i < 300; i++)
					usleep(100000);
				_exit(0);
			}
			printf("child %d\n", (int)c);
		} else if (strncmp(line, "map ", 4) == 0) {
			/* Map a file, so that its path shows in /proc/self/maps like a loaded
			 * library. */
			int fd;

			line[strcspn(line, "\n")] = '\0';
			fd = open(line + 4, O_RDONLY);
			printf("map %s\n", fd >= 0 && mmap(NULL, 4096, PROT_READ, MAP_PRIVATE, fd,
							   0) != MAP_FAILED
						   ? "ok"
						   : "failed");
		} else if (strncmp(line, "thread ", 7) == 0) {
			/* A thread with this name, as runtimes name their helpers. */
			pthread_t t;

			line[strcspn(line, "\n")] = '\0';
			line[7 + 15] = '\0';
			printf("thread %s\n", pthread_create(&t, NULL, idle, NULL) == 0 &&
							      pthread_setname_np(t, line + 7) == 0
						      ? "ok"
						      : "failed");
		} else if (strncmp(line, "ping", 4) == 0) {
			printf("pong\n");
		} else if (strncmp(line, "quit", 4) == 0) {
			break;
		} else {
			printf("unknown\n");
		}
	}
	return 0;
}
