/* python: whether root may run a Python, its standard library included: the directories Python
 * would load from before a line of ours runs (docs/FILES.md). It reads files; it runs nothing. */
#define _GNU_SOURCE
#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "cn_safe.h"

/* Owned by root or by us, and writable by nobody else: no sticky directory excepted here. */
static bool ours(const struct stat *st)
{
	return (st->st_uid == 0 || st->st_uid == geteuid()) && !(st->st_mode & 022);
}

/* path (followed, as Python would) and every directory above it ours. 0, or -EPERM with why. */
static int ours_up(const char *path, const char *what, char *why, size_t len)
{
	char real[PATH_MAX], *slash;
	struct stat st;

	if (!realpath(path, real)) {
		snprintf(why, len, "%s %s: %s", what, path, strerror(errno));
		return -EPERM;
	}
	for (;;) {
		if (stat(real, &st) < 0 || !ours(&st)) {
			snprintf(why, len, "%s %s: in %s, which another user may write to", what,
				 path, real);
			return -EPERM;
		}
		if (strcmp(real, "/") == 0)
			return 0;
		slash = strrchr(real, '/');
		slash[slash == real] = '\0'; /* the parent; "/" last */
	}
}

/* The tree walk's state (nftw passes none): the first refusal, and the directories links name,
 * walked after the tree (each once). */
static struct {
	char *why;
	const char *what;
	size_t len;
	int r;
	char (*links)[PATH_MAX];
	int n_links, cap_links;
} walk;

/* A directory a link names, to be walked after the tree. */
static int add_link(const char *real)
{
	if (walk.n_links == walk.cap_links) {
		int cap = walk.cap_links ? 2 * walk.cap_links : 16;
		void *more = realloc(walk.links, (size_t)cap * sizeof(*walk.links));

		if (!more)
			return -ENOMEM;
		walk.links = more;
		walk.cap_links = cap;
	}
	snprintf(walk.links[walk.n_links++], PATH_MAX, "%s", real);
	return 0;
}

/* A link that names nothing yet: the directory its name would be made in (which must be ours,
 * so that nobody else can make it) into dir; false when even that is not there. */
static bool dangling_dir(const char *link, char *dir)
{
	char to[PATH_MAX], full[2 * PATH_MAX + 2];
	ssize_t n = readlink(link, to, sizeof(to) - 1);
	char *slash;

	if (n <= 0)
		return false;
	to[n] = '\0';
	if (to[0] == '/')
		snprintf(full, sizeof(full), "%s", to);
	else
		snprintf(full, sizeof(full), "%.*s/%s", (int)(strrchr(link, '/') - link), link, to);
	slash = strrchr(full, '/');
	slash[slash == full] = '\0';
	return realpath(full, dir) != NULL;
}

static int visit(const char *path, const struct stat *st, int type, struct FTW *f)
{
	char real[PATH_MAX];
	struct stat t;

	(void)f;
	if (type == FTW_SL) { /* what it names, and all above that, ours; a directory walked */
		if (!realpath(path, real) && errno == ENOENT && dangling_dir(path, real))
			walk.r = ours_up(real, walk.what, walk.why, walk.len);
		else if (ours_up(path, walk.what, walk.why, walk.len) < 0)
			walk.r = -EPERM;
		else if (stat(real, &t) == 0 && S_ISDIR(t.st_mode))
			walk.r = add_link(real);
		return walk.r ? 1 : 0;
	}
	if (type == FTW_NS || type == FTW_DNR || !ours(st)) {
		snprintf(walk.why, walk.len, "%s %s: %s", walk.what, path,
			 type == FTW_NS || type == FTW_DNR ? "cannot be read"
							   : "another user may write to it");
		walk.r = -EPERM;
		return 1;
	}
	return 0;
}

/* Every directory and file of the tree at root ours, and every link in it naming something
 * ours, and the trees those links name (each walked once). 0, or -errno with why. */
static int tree_ours(const char *root, const char *what, char *why, size_t len)
{
	int done = 0, r;

	walk.why = why, walk.what = what, walk.len = len, walk.r = 0, walk.n_links = 0;
	r = nftw(root, visit, 16, FTW_PHYS) < 0 ? -errno : walk.r;
	/* The directories links name, as Python would follow them; a name seen before is not
	 * walked again (a link to a directory above it would loop). */
	while (!r && done < walk.n_links) {
		bool seen = false;

		for (int i = 0; i < done && !seen; i++)
			seen = strcmp(walk.links[i], walk.links[done]) == 0;
		if (!seen && nftw(walk.links[done], visit, 16, FTW_PHYS) < 0)
			r = -errno;
		r = r ? r : walk.r;
		done++;
		if (walk.n_links > 4096) /* a tree of links to itself: no library does that */
			r = -ELOOP;
	}
	if (r == -ELOOP || r == -ENOMEM)
		snprintf(why, len, "%s %s: too many links to follow", what, root);
	free(walk.links);
	walk.links = NULL;
	walk.cap_links = walk.n_links = 0;
	return r;
}

/* pyvenv.cfg beside the interpreter or above it, as Python looks: its "home" into home ("" when
 * it names none) and "version" (X.Y) into ver ("" when none). 0, 1 when there is none, or -errno
 * with why (one another user could have written). */
static int venv_cfg(const char *dir, char *home, size_t hlen, char *ver, size_t vlen, char *why,
		    size_t len)
{
	char path[PATH_MAX], real[PATH_MAX], line[PATH_MAX + 64], *p;
	FILE *f = NULL;

	home[0] = ver[0] = '\0';
	for (int up = 0; up < 2 && !f; up++) {
		snprintf(path, sizeof(path), "%s%s/pyvenv.cfg", dir, up ? "/.." : "");
		if (access(path, F_OK) < 0)
			continue;
		if (cn_safe_trusted(path, false, real, sizeof(real), why, len) < 0)
			return -EPERM;
		f = fopen(real, "re");
	}
	if (!f)
		return 1;
	while (fgets(line, sizeof(line), f)) {
		char *key = line + strspn(line, " \t"), *eq = strchr(line, '=');

		if (!eq)
			continue;
		for (p = eq; p > key && (p[-1] == ' ' || p[-1] == '\t'); p--)
			;
		*p = '\0';
		p = eq + 1 + strspn(eq + 1, " \t");
		p[strcspn(p, "\r\n")] = '\0';
		if (strcasecmp(key, "home") == 0)
			snprintf(home, hlen, "%s", p);
		else if (strcasecmp(key, "version") == 0 || strcasecmp(key, "version_info") == 0)
			snprintf(ver, vlen, "%.*s", (int)strspn(p, "0123456789."), p);
	}
	fclose(f);
	/* "3.11.2": its X.Y */
	if ((p = strchr(ver, '.')) && (p = strchr(p + 1, '.')))
		*p = '\0';
	return 0;
}

/* One of a directory's library directories, lib or lib64, as Python would take it for version
 * ver: where it is, it ours, and its pythonX.Y ours whole; whether pythonX.Y holds the landmarks
 * of a prefix (os.py or os.pyc) and of an exec prefix (lib-dynload) into *prefix and *exec. 0, or
 * -errno with why. */
static int lib_ours(const char *a, const char *lib, const char *ver, bool *prefix, bool *exec,
		    char *why, size_t len)
{
	char l[PATH_MAX], p[PATH_MAX + 64];
	struct stat st;

	snprintf(l, sizeof(l), "%s/%s", strcmp(a, "/") ? a : "", lib);
	if (lstat(l, &st) < 0)
		return 0; /* and nobody else can make it: a is ours */
	if (ours_up(l, "its standard library's directory", why, len) < 0)
		return -EPERM;
	snprintf(p, sizeof(p), "%s/python%s", l, ver);
	if (stat(p, &st) == 0 && tree_ours(p, "its standard library:", why, len) < 0)
		return -EPERM;
	snprintf(p, sizeof(p), "%s/python%s/os.py", l, ver);
	*prefix |= access(p, F_OK) == 0;
	snprintf(p, sizeof(p), "%s/python%s/os.pyc", l, ver);
	*prefix |= access(p, F_OK) == 0;
	snprintf(p, sizeof(p), "%s/python%s/lib-dynload", l, ver);
	*exec |= stat(p, &st) == 0 && S_ISDIR(st.st_mode);
	return 0;
}

/* The parent of the directory a, in place, as Python takes it (by name); false at "/". */
static bool up(char *a)
{
	char *slash = strrchr(a, '/');

	if (strcmp(a, "/") == 0 || !slash)
		return false;
	slash[slash == a] = '\0'; /* "/" last */
	return true;
}

/* A file Python would open if it is there (a link naming nothing yet: where it would be made),
 * ours and all above it. 0, or -EPERM with why. */
static int file_ours(const char *path, const char *what, char *why, size_t len)
{
	char dir[PATH_MAX];
	struct stat st;

	if (stat(path, &st) < 0 && errno == ENOENT && dangling_dir(path, dir))
		return ours_up(dir, what, why, len);
	return ours_up(path, what, why, len);
}

/* The zip Python looks for before anything else: lib/pythonXY.zip in every directory from a up
 * to "/" (lib64's too, whichever its build names), the first one there being its prefix. Each
 * directory ours (nobody else could make a lib/ in it), each lib ours up to "/", each zip there
 * ours and the library beside it (the prefix's lib/pythonX.Y, then on sys.path) ours whole. All
 * the way up, not only to the first zip: which of lib and lib64 the build names is not known
 * here. 0, or -EPERM with why. */
static int zips_ours(char *a, const char *ver, char *why, size_t len)
{
	static const char *const libs[] = { "lib", "lib64" };
	char l[PATH_MAX], p[PATH_MAX + 64], zip[16];
	struct stat st;

	snprintf(zip, sizeof(zip), "%.*s%s", (int)strcspn(ver, "."), ver,
		 strchr(ver, '.') ? strchr(ver, '.') + 1 : "");
	do {
		if (stat(a, &st) < 0 || !ours(&st)) {
			snprintf(why, len,
				 "it looks for its standard library in %s, which another user may "
				 "write to",
				 a);
			return -EPERM;
		}
		for (int i = 0; i < 2; i++) {
			snprintf(l, sizeof(l), "%s/%s", strcmp(a, "/") ? a : "", libs[i]);
			if (lstat(l, &st) < 0)
				continue; /* and nobody else can make it: a is ours */
			if (ours_up(l, "its standard library's directory", why, len) < 0)
				return -EPERM;
			snprintf(p, sizeof(p), "%s/python%s.zip", l, zip);
			if (lstat(p, &st) < 0)
				continue;
			if (file_ours(p, "its standard library:", why, len) < 0)
				return -EPERM;
			snprintf(p, sizeof(p), "%s/python%s", l, ver);
			if (stat(p, &st) == 0 &&
			    tree_ours(p, "its standard library:", why, len) < 0)
				return -EPERM;
		}
	} while (up(a));
	return 0;
}

/* dir into a, as Python takes it (its parents by name), without a trailing '/': a. */
static char *from(char *a, size_t len, const char *dir)
{
	snprintf(a, len, "%s", dir);
	while (strlen(a) > 1 && a[strlen(a) - 1] == '/')
		a[strlen(a) - 1] = '\0';
	return a;
}

/* Python's own search (its getpath) from dir, the home it starts from: the zip in every directory
 * up to "/" (zips_ours), then up from dir until a directory holds both landmarks of the library
 * of version ver, each directory's lib and lib64 ours (lib_ours). 0, or -errno with why. */
static int search_up(const char *dir, const char *ver, char *why, size_t len)
{
	char a[PATH_MAX];
	bool prefix = false, exec = false;

	if (dir[0] != '/' || strlen(dir) >= sizeof(a)) {
		snprintf(why, len, "its home %s: not an absolute path", dir);
		return -EINVAL;
	}
	if (zips_ours(from(a, sizeof(a), dir), ver, why, len) < 0)
		return -EPERM;
	from(a, sizeof(a), dir);
	do {
		if (lib_ours(a, "lib", ver, &prefix, &exec, why, len) < 0 ||
		    lib_ours(a, "lib64", ver, &prefix, &exec, why, len) < 0)
			return -EPERM;
		if (prefix && exec)
			return 0;
	} while (up(a));
	snprintf(
		why, len,
		"no lib/python%s with os.py and lib-dynload above %s: it would take the library it "
		"was built with, which cannot be checked",
		ver, dir);
	return -ENOENT;
}

/* Whether the file at path is a script ("#!"), not an interpreter. */
static bool script(const char *path)
{
	char head[2] = "";
	FILE *f = fopen(path, "re");
	bool is = f && fread(head, 1, 2, f) == 2 && head[0] == '#' && head[1] == '!';

	if (f)
		fclose(f);
	return is;
}

/* Whether Python's path would come from somewhere else than its library's search: a build tree
 * (pybuilddir.txt, or Modules/Setup.local, beside it: the tree's Lib) or a ._pth file beside it
 * (real + "._pth", whose lines are its path). 0, or -EPERM with why. */
static int build_or_pth(const char *real, const char *dir, char *why, size_t len)
{
	static const char *const build[] = { "pybuilddir.txt", "Modules/Setup.local" };
	char p[PATH_MAX + 32];

	for (int i = 0; i < 2; i++) {
		snprintf(p, sizeof(p), "%s/%s", dir, build[i]);
		if (access(p, F_OK) == 0) {
			snprintf(why, len, "%s: a Python in its build tree (%s); not run", real,
				 build[i]);
			return -EPERM;
		}
	}
	snprintf(p, sizeof(p), "%s._pth", real);
	if (access(p, F_OK) == 0) {
		snprintf(why, len, "%s: %s sets its path, which is not checked; not run", real, p);
		return -EPERM;
	}
	return 0;
}

int python_trusted(const char *real, char *why, size_t len)
{
	char dir[PATH_MAX], home[PATH_MAX], ver[16], what[PATH_MAX + 300], p[PATH_MAX + 32];
	const char *base = strrchr(real, '/') ? strrchr(real, '/') + 1 : real;
	int r;

	/* A wrapper script of the user's own, or root's (cn_safe_trusted found it so), runs what
	 * its author chose. Root's check cannot follow it to the Python it starts, whose library
	 * another user may write: root runs the interpreter named, or nothing. */
	if (script(real) && geteuid() != 0)
		return 0;
	if (script(real)) {
		snprintf(why, len,
			 "%s: a script, not a Python: root checks the standard library of the "
			 "interpreter it runs, which a script hides; name the interpreter itself; "
			 "not run",
			 real);
		return -EPERM;
	}
	snprintf(dir, sizeof(dir), "%.*s", (int)(base - real - (base > real + 1)), real);
	/* What else sets its path: a build tree's files beside it, a ._pth file named after it. */
	r = build_or_pth(real, dir, why, len);
	if (r < 0)
		return r;
	r = venv_cfg(dir, home, sizeof(home), ver, sizeof(ver), what, sizeof(what));
	if (r < 0) {
		snprintf(why, len, "%s: its pyvenv.cfg: %s", real, what);
		return r;
	}
	/* Its version: the venv's word, else its name's (python3.11, as installs name it). */
	if (!ver[0] && strncmp(base, "python", 6) == 0 && strchr(base + 6, '.'))
		snprintf(ver, sizeof(ver), "%.15s", base + 6);
	if (!ver[0] || strspn(ver, "0123456789.") != strlen(ver) || !strchr(ver, '.')) {
		snprintf(why, len,
			 "%s: its version is not in its name (pythonX.Y) nor in a pyvenv.cfg: its "
			 "standard library cannot be found to check; not run",
			 real);
		return -EINVAL;
	}
	/* A venv's home as it is written (Python goes up by its names) and where it leads. */
	r = search_up(home[0] ? home : dir, ver, what, sizeof(what));
	if (r == 0 && home[0] && realpath(home, p) && strcmp(p, home) != 0)
		r = search_up(p, ver, what, sizeof(what));
	if (r < 0) {
		char line[sizeof(what) + PATH_MAX + 16];

		/* a name in the tree may be another user's: its control characters not said */
		snprintf(line, sizeof(line), "%s: %s; not run", real, what);
		cn_status_text(why, len, line);
	}
	return r;
}
