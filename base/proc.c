/* proc: what /proc says of another process (see cn_proc.h). */
#include "cn_proc.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

unsigned long long cn_proc_starttime(int pid)
{
	char path[64], buf[1024], *p;
	unsigned long long v = 0;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	/* The command name may hold spaces and parens: count fields after the last ')'. */
	p = strrchr(buf, ')');
	if (!p)
		return 0;
	for (int field = 2; field < 22 && p; field++)
		p = strchr(p + 1, ' ');
	if (p)
		v = strtoull(p + 1, NULL, 10);
	return v;
}
