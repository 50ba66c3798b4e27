/* rates: how long suspends and resumes take on this machine, per GPU model, learnt from those done
 * (docs/FILES.md). Agent thread. */
#define _GNU_SOURCE
#include "agent/rates.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cn_safe.h"

#define KEEP	  32
#define MAX_LINES 1024
#define LINE_LEN  160
/* Each kind's one table: its word in the file, and its name in an estimate's source (one, many). */
static const struct {
	const char *word, *said[2];
} kinds[] = {
	[CN_RATE_SUSPEND] = { "suspend", { "suspend", "suspends" } },
	[CN_RATE_RESUME] = { "resume", { "resume", "resumes" } },
	[CN_RATE_SUSPEND_DISK] = { "suspend-disk", { "suspend to disk", "suspends to disk" } },
	[CN_RATE_RESUME_DISK] = { "resume-disk", { "resume from disk", "resumes from disk" } },
};
/* The defaults: a fixed part and seconds a GiB for each kind, fitted to a model's measured
 * suspends and resumes; the first row is taken for any other model. The H200's: 8.5 to 60.5 GiB
 * (holdmem and JAX's default pool), suspended in 0.66-4.00 s and resumed in 0.34-1.92 s, fitted
 * within 4 %; its disk rates were not measured, and are the H100's. */
static const struct {
	const char *model, *name;
	double fixed_s[4], per_gib[4];
} defaults[] = {
	{ "", "an H100's", { 0.2, 0.14, 0.2, 0.14 }, { 0.08, 0.033, 0.65, 0.75 } },
	{ "H200", "an H200's", { 0.12, 0.09, 0.2, 0.14 }, { 0.062, 0.030, 0.65, 0.75 } },
};

/* The state directory, made 0700 when missing, and used only if it is ours and nobody else may
 * write in it (another user may have made it first where XDG_STATE_HOME is shared): its fd, or -1
 * (none, or not ours: the estimates keep to the defaults). */
static int state_dir(void)
{
	const char *xdg = secure_getenv("XDG_STATE_HOME"), *home = secure_getenv("HOME");
	char base[4096], why[300];

	if (xdg && xdg[0] == '/') {
		snprintf(base, sizeof(base), "%s", xdg);
	} else if (home && home[0] == '/') {
		snprintf(base, sizeof(base), "%s/.local", home);
		mkdir(base, 0700);
		snprintf(base, sizeof(base), "%s/.local/state", home);
	} else {
		return -1;
	}
	mkdir(base, 0700);
	snprintf(base + strlen(base), sizeof(base) - strlen(base), "/cudanap");
	mkdir(base, 0700);
	return cn_safe_dir(AT_FDCWD, base, (struct cn_owner){ geteuid(), false }, false, why,
			   sizeof(why));
}

static void boot_id(char *out, size_t len)
{
	FILE *f = fopen("/proc/sys/kernel/random/boot_id", "re");

	out[0] = '\0';
	if (f && fgets(out, (int)len, f))
		out[strcspn(out, "\n")] = '\0';
	if (f)
		fclose(f);
}

/* The file's lines (the first, "boot ID", kept apart): their count. */
static int load(int dir, char (*lines)[LINE_LEN], char *boot, size_t blen)
{
	static char text[MAX_LINES * LINE_LEN];
	char why[300], *save = NULL;
	int n = 0;

	boot[0] = '\0';
	if (cn_safe_read(dir, "rates", (struct cn_owner){ geteuid(), false }, text, sizeof(text),
			 why, sizeof(why)) < 0)
		return 0;
	for (char *l = strtok_r(text, "\n", &save); l && n < MAX_LINES;
	     l = strtok_r(NULL, "\n", &save)) {
		if (strncmp(l, "boot ", 5) == 0)
			snprintf(boot, blen, "%s", l + 5);
		else
			snprintf(lines[n++], LINE_LEN, "%s", l);
	}
	return n;
}

/* The lock on the file, taken without waiting on anyone for long: only this user's agents take it,
 * each for a moment, but one of them may be stopped while it holds it. Its fd, or -1. */
static int lock_rates(int dir)
{
	int fd = cn_safe_lock_file(dir, "rates.lock");
	struct stat st;

	if (fd >= 0 && (fstat(fd, &st) < 0 || st.st_uid != geteuid())) {
		close(fd);
		return -1;
	}
	for (int i = 0; fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) < 0; i++) {
		if (errno != EWOULDBLOCK || i == 20) {
			close(fd);
			return -1;
		}
		usleep(10000);
	}
	return fd;
}

static bool same(const char *line, int kind, const char *model)
{
	char k[16];
	int off = 0;

	return sscanf(line, "%15s %*f %*f %n", k, &off) == 1 && off &&
	       strcmp(k, kinds[kind].word) == 0 && strcmp(line + off, model) == 0;
}

void cn_rates_record(const char *model, enum cn_rate_kind kind, double gib, double seconds)
{
	static char lines[MAX_LINES][LINE_LEN];
	char tmp[32], boot[64], now[64];
	static pid_t owner; /* whose counts: a forked child starts its own */
	static unsigned done[4];
	int n, fd, dir, lock, kept = 0;
	FILE *f;

	if (owner != getpid()) {
		owner = getpid();
		memset(done, 0, sizeof(done));
	}
	if (!model[0] || gib <= 0 || seconds <= 0 || done[kind]++ == 0 || (dir = state_dir()) < 0)
		return;
	lock = lock_rates(dir);
	if (lock < 0) {
		close(dir);
		return;
	}
	n = load(dir, lines, boot, sizeof(boot));
	boot_id(now, sizeof(now));
	snprintf(tmp, sizeof(tmp), ".rates.%d", (int)getpid());
	/* Made anew, never a FIFO or link left at the name (base/safe.c's rule for temp files). */
	unlinkat(dir, tmp, 0);
	fd = openat(dir, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC,
		    0600);
	f = fd >= 0 ? fdopen(fd, "w") : NULL;
	if (f) {
		bool cold = kind == CN_RATE_SUSPEND && strcmp(boot, now) != 0;

		fprintf(f, "boot %s\n", now);
		for (int i = 0; i < n; i++)
			kept += same(lines[i], kind, model);
		/* The oldest of its kind and model go first, when there are too many. */
		for (int i = 0, drop = kept + !cold - KEEP; i < n; i++) {
			if (same(lines[i], kind, model) && drop-- > 0)
				continue;
			fprintf(f, "%s\n", lines[i]);
		}
		if (!cold)
			fprintf(f, "%s %.4f %.4f %s\n", kinds[kind].word, gib, seconds, model);
		if (fclose(f) == 0)
			renameat(dir, tmp, dir, "rates");
		else
			unlinkat(dir, tmp, 0);
	} else if (fd >= 0) {
		close(fd);
	}
	close(lock);
	close(dir);
}

/* The defaults' row for a model. */
static unsigned defaults_of(const char *model)
{
	for (unsigned i = 1; i < sizeof(defaults) / sizeof(defaults[0]); i++)
		if (strstr(model, defaults[i].model))
			return i;
	return 0;
}

/* The defaults' estimate for gib. */
static double by_default(unsigned row, enum cn_rate_kind kind, double gib)
{
	return defaults[row].fixed_s[kind] + defaults[row].per_gib[kind] * gib;
}

double cn_rates_estimate(const char *model, enum cn_rate_kind kind, double gib, char *source,
			 size_t len)
{
	static char lines[MAX_LINES][LINE_LEN];
	double sx = 0, sy = 0, sxx = 0, sxy = 0, ratio = 0, lo = 1e30, hi = 0, a, b;
	char boot[64];
	int n = 0, m = 0, dir = model[0] ? state_dir() : -1;
	unsigned row = defaults_of(model);

	if (dir >= 0) {
		n = load(dir, lines, boot, sizeof(boot));
		close(dir);
	}
	for (int i = 0; i < n; i++) {
		double x, y;

		if (!same(lines[i], kind, model) || sscanf(lines[i], "%*s %lf %lf", &x, &y) != 2)
			continue;
		sx += x, sy += y, sxx += x * x, sxy += x * y, m++;
		ratio += y / by_default(row, kind, x);
		lo = x < lo ? x : lo;
		hi = x > hi ? x : hi;
	}
	if (!m) {
		snprintf(source, len, "defaults (%.2f s and %.3f s a GiB, %s)",
			 defaults[row].fixed_s[kind], defaults[row].per_gib[kind],
			 defaults[row].name);
		return by_default(row, kind, gib);
	}
	snprintf(source, len, "this machine: %d %s (%s)", m, kinds[kind].said[m != 1], model);
	/* A line through them where their sizes differ enough to tell its slope, for a size near
	 * theirs; else the defaults' shape, scaled by how this machine compared with them (one
	 * 1 GiB suspend says little of a 32 GiB one's slope: measured on an H100, the line from it
	 * missed 8 GiB by 30 %). */
	if (m >= 3 && hi >= 4 * lo && gib >= lo / 2 && gib <= 2 * hi && m * sxx - sx * sx > 0) {
		b = (m * sxy - sx * sy) / (m * sxx - sx * sx);
		a = (sy - b * sx) / m;
		if (a >= 0 && b > 0)
			return a + b * gib;
	}
	return ratio / m * by_default(row, kind, gib);
}
