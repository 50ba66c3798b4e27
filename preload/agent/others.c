/* others: the other living processes of this user that share this process's status directory, as
 * their status files say (docs/FILES.md). Agent thread. */
#define _GNU_SOURCE
#include "agent/others.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cn_proc.h"
#include "cn_safe.h"

void cn_others_each(const char *dir, bool (*fn)(const struct cn_status *s, void *arg), void *arg)
{
	DIR *d = opendir(dir);
	struct dirent *e;

	while (d && (e = readdir(d))) {
		struct cn_status s;
		struct cn_owner o;
		char name[32];
		int pid = atoi(e->d_name);

		snprintf(name, sizeof(name), "%d.json", pid);
		if (pid <= 0 || pid == getpid() || strcmp(name, e->d_name) != 0 ||
		    cn_status_read(dir, pid, &s) < 0 || s.starttime != cn_proc_starttime(pid) ||
		    cn_safe_owner_of(pid, false, &o) < 0 || o.uid != getuid())
			continue;
		if (!fn(&s, arg))
			break;
	}
	if (d)
		closedir(d);
}

/* The ready host copies of at most this many of them are counted. */
#define MAX_KEPT 256

struct kept {
	unsigned long long bytes;
	int n;
};

static bool add_kept(const struct cn_status *s, void *arg)
{
	struct kept *k = arg;

	if (s->host_kept_mib > 0 && k->n < MAX_KEPT) {
		k->bytes += (unsigned long long)(s->host_kept_mib * (1 << 20));
		k->n++;
	}
	return k->n < MAX_KEPT;
}

unsigned long long cn_others_kept_bytes(const char *dir)
{
	struct kept k = { 0, 0 };

	cn_others_each(dir, add_kept, &k);
	return k.bytes;
}
