/* bigenv MIB [NAME=VALUE]...: a process that points its environment, as /proc/PID/environ shows
 * it, at MIB MiB of a mapping it never touches (prctl PR_SET_MM_MAP, which needs no privilege),
 * NAME=VALUE... at its very end; prints "forged" when done and sleeps until killed. Exits 77 when
 * the kernel refuses the new range (no CONFIG_CHECKPOINT_RESTORE). What a user can do to every
 * reader of its environment: the hostile suite's stand-in for it. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <unistd.h>

/* What the map holds now, from fields 26-28 and 45-51 of /proc/self/stat: all but the
 * environment's range is given back as it is. */
static int current(struct prctl_mm_map *m)
{
	char buf[4096], *p;
	unsigned long long v[52] = { 0 };
	FILE *f = fopen("/proc/self/stat", "re");
	size_t n = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;

	if (f)
		fclose(f);
	buf[n] = '\0';
	if (!(p = strrchr(buf, ')')))
		return -1;
	p += 2; /* field 3, the state */
	for (int i = 3; i <= 51 && p; i++) {
		v[i] = strtoull(p, NULL, 10);
		p = strchr(p, ' ');
		p = p ? p + 1 : NULL;
	}
	m->start_code = v[26], m->end_code = v[27], m->start_stack = v[28];
	m->start_data = v[45], m->end_data = v[46], m->start_brk = v[47];
	m->arg_start = v[48], m->arg_end = v[49];
	m->brk = (unsigned long long)(unsigned long)sbrk(0);
	m->auxv = NULL, m->auxv_size = 0, m->exe_fd = (__u32)-1;
	return 0;
}

int main(int argc, char **argv)
{
	size_t size = argc > 1 ? strtoull(argv[1], NULL, 10) << 20 : 0, tail = 0;
	struct prctl_mm_map m;
	char *env;

	if (!size) {
		fprintf(stderr, "usage: bigenv MIB [NAME=VALUE]...\n");
		return 2;
	}
	for (int i = 2; i < argc; i++)
		tail += strlen(argv[i]) + 1;
	env = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
		   -1, 0);
	if (env == MAP_FAILED || tail > size || current(&m) < 0) {
		perror("bigenv");
		return 1;
	}
	/* The variables at the end: all before them NUL bytes no page of which is ever touched. */
	for (size_t i = 2, at = size - tail; i < (size_t)argc; i++) {
		strcpy(env + at, argv[i]);
		at += strlen(argv[i]) + 1;
	}
	m.env_start = (unsigned long long)(unsigned long)env;
	m.env_end = m.env_start + size;
	if (prctl(PR_SET_MM, PR_SET_MM_MAP, (unsigned long)&m, sizeof(m), 0) < 0) {
		perror("bigenv: prctl(PR_SET_MM_MAP)");
		return 77;
	}
	printf("forged\n");
	fflush(stdout);
	for (;;)
		pause();
}
