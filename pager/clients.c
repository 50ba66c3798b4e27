/* clients: the pager's socket (systemd's, or made here) and the programs on it, each known by
 * SO_PEERCRED and held to a few connections and one need at a time. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "clock.h"
#include "cn_proc.h"
#include "cn_safe.h"
#include "pager.h"

#define CLIENTS	 256   /* connections at once */
#define PER_USER 8     /* of one user */
#define QUIET_MS 10000 /* a connection without a need this long is closed */

static int listen_fd = -1;
static bool made_here;
static char sock_path[sizeof(((struct sockaddr_un *)0)->sun_path)];
static struct client *clients[CLIENTS];

/* systemd's socket, if it handed one to this process: fd 3. */
static int from_systemd(void)
{
	const char *pid = getenv("LISTEN_PID"), *fds = getenv("LISTEN_FDS");
	int type;
	socklen_t l = sizeof(type);

	if (!pid || !fds || atoi(pid) != (int)getpid() || atoi(fds) < 1)
		return -1;
	unsetenv("LISTEN_PID");
	unsetenv("LISTEN_FDS");
	unsetenv("LISTEN_FDNAMES");
	if (getsockopt(3, SOL_SOCKET, SO_TYPE, &type, &l) < 0 || type != SOCK_SEQPACKET) {
		log_info("the socket systemd handed over is not a SOCK_SEQPACKET one "
			 "(ListenSequentialPacket= in cudanap-pager.socket)");
		return -1;
	}
	fcntl(3, F_SETFD, FD_CLOEXEC);
	fcntl(3, F_SETFL, fcntl(3, F_GETFL) | O_NONBLOCK);
	return 3;
}

/* The socket's directory: root's, nobody else may write in it; made 0755 when missing. */
static int check_dir(const char *path)
{
	char dir[PATH_MAX], why[300];
	char *slash;
	int fd;

	snprintf(dir, sizeof(dir), "%s", path);
	slash = strrchr(dir, '/');
	if (!slash)
		return -1;
	*slash = '\0';
	if (!dir[0])
		snprintf(dir, sizeof(dir), "/");
	if (mkdir(dir, 0755) < 0 && errno != EEXIST) {
		log_info("%s: cannot be made: %s", dir, strerror(errno));
		return -1;
	}
	fd = cn_safe_dir(AT_FDCWD, dir, (struct cn_owner){ geteuid(), true }, false, why,
			 sizeof(why));
	if (fd < 0) {
		log_info("the socket's directory is not used: %s", why);
		return -1;
	}
	close(fd);
	return 0;
}

int clients_listen(const char *path)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	struct stat st;
	int fd;

	listen_fd = from_systemd();
	if (listen_fd >= 0)
		return 0;
	if (strlen(path) >= sizeof(a.sun_path) || check_dir(path) < 0) {
		log_info("%s: not a socket path it may use", path);
		return -1;
	}
	snprintf(a.sun_path, sizeof(a.sun_path), "%s", path);
	/* a socket left by a pager that ended, nothing else */
	if (lstat(path, &st) == 0 && S_ISSOCK(st.st_mode))
		unlink(path);
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 || chmod(path, 0666) < 0 ||
	    listen(fd, 64) < 0) {
		log_info("%s: cannot listen there: %s", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	listen_fd = fd;
	made_here = true;
	snprintf(sock_path, sizeof(sock_path), "%s", path);
	return 0;
}

void clients_close_all(void)
{
	for (int i = 0; i < CLIENTS; i++)
		if (clients[i]) {
			jobs_done(clients[i], true);
			close(clients[i]->fd);
			free(clients[i]);
			clients[i] = NULL;
		}
	if (made_here)
		unlink(sock_path);
}

int clients_fds(int *fds, int max)
{
	int n = 0;

	if (listen_fd >= 0 && n < max)
		fds[n++] = listen_fd;
	for (int i = 0; i < CLIENTS && n < max; i++)
		if (clients[i])
			fds[n++] = clients[i]->fd;
	return n;
}

static void drop(int i, const char *why)
{
	struct client *c = clients[i];

	if (why)
		log_debug("%d (%s): connection closed: %s", c->pid, c->user, why);
	jobs_done(c, true);
	close(c->fd);
	free(c);
	clients[i] = NULL;
}

/* A new connection: its peer known, or refused when it holds too many. */
static void take(void)
{
	struct ucred cr;
	socklen_t l = sizeof(cr);
	int fd = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK), slot = -1, mine = 0;
	struct client *c;

	if (fd < 0)
		return;
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &l) < 0 || cr.pid <= 0) {
		close(fd);
		return;
	}
	for (int i = 0; i < CLIENTS; i++) {
		if (!clients[i] && slot < 0)
			slot = i;
		mine += clients[i] && clients[i]->uid == cr.uid;
	}
	if (slot < 0 || mine >= PER_USER || !(c = calloc(1, sizeof(*c)))) {
		static const char full[] = "refused why=the node pager holds as many connections "
					   "of this user as it takes; try again";

		char drop[CN_PAGERWIRE_MAX];

		send(fd, full, sizeof(full) - 1, MSG_DONTWAIT | MSG_NOSIGNAL);
		/* what it sent already read first: a socket closed on unread data resets the
		 * peer, which would lose the refusal */
		while (recv(fd, drop, sizeof(drop), MSG_DONTWAIT) > 0)
			;
		close(fd);
		return;
	}
	*c = (struct client){ .fd = fd,
			      .pid = cr.pid,
			      .uid = cr.uid,
			      .gid = cr.gid,
			      .starttime = cn_proc_starttime(cr.pid),
			      .since_ms = cn_clock_ms() };
	scan_rule_of(cr.uid, cr.gid, c->user, sizeof(c->user));
	clients[slot] = c;
}

/* One message from client i. */
static void serve(int i)
{
	struct client *c = clients[i];
	char msg[CN_PAGERWIRE_MAX + 1];
	struct cn_pagerwire_need need;
	ssize_t n = recv(c->fd, msg, sizeof(msg), MSG_DONTWAIT | MSG_TRUNC);

	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0) {
		drop(i, NULL);
		return;
	}
	c->since_ms = cn_clock_ms();
	if ((size_t)n > CN_PAGERWIRE_MAX) {
		drop(i, "a message over its size");
		return;
	}
	switch (cn_pagerwire_kind(msg, (size_t)n)) {
	case CN_PW_NEED:
		if (c->busy || cn_pagerwire_need_parse(msg, (size_t)n, &need) < 0) {
			drop(i, c->busy ? "a need while another is served" : "a malformed need");
			return;
		}
		jobs_need(c, &need);
		return;
	case CN_PW_DONE: /* a connection is one need: once it ended (its last word said), closed */
		jobs_done(c, false);
		if (!c->busy)
			drop(i, NULL);
		return;
	default:
		drop(i, "not a program's message");
	}
}

void clients_ready(int fd)
{
	if (fd == listen_fd) {
		take();
		return;
	}
	for (int i = 0; i < CLIENTS; i++)
		if (clients[i] && clients[i]->fd == fd) {
			serve(i);
			return;
		}
}

void clients_tick(double now_ms)
{
	for (int i = 0; i < CLIENTS; i++)
		if (clients[i] && !clients[i]->busy && now_ms - clients[i]->since_ms > QUIET_MS)
			drop(i, "quiet too long");
}

int clients_send(struct client *c, const struct cn_pagerwire_answer *a)
{
	char buf[CN_PAGERWIRE_MAX];
	int n = cn_pagerwire_answer_fmt(a, buf, sizeof(buf));

	if (n > 0 && send(c->fd, buf, (size_t)n, MSG_DONTWAIT | MSG_NOSIGNAL) == n)
		return 0;
	shutdown(c->fd, SHUT_RDWR); /* poll sees it gone and drops it */
	return -1;
}
