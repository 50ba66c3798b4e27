/* nodepager: [nap] make_room through the node pager (cudanap-pager, root's), for every user's
 * programs on a GPU (docs/PAGER.md). Agent thread, but for the release an app thread makes once
 * its call is tried again (under mu). */
#define _GNU_SOURCE
#include "agent/nodepager.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "cn_pagerwire.h"
#include "agent/log.h"
#include "agent/report.h"
#include "agent/state.h"

#define IDLE_CLOSE_MS 2000  /* a connection nobody looked at this long is closed */
#define SETTLE_MS     60000 /* the pager's last word on a room used already, awaited */

/* File-scope, under mu: the app thread's release and cuda/light.c's question (cn_room_coming)
 * reach the connections without the agent's context. */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;

static struct conn {
	int fd;
	struct cn_pagerwire_need need;
	struct cn_pagerwire_answer answer; /* kind 0 until one came; COMING kept until MADE */
	bool wait_said, made_said;
	bool settling; /* the room used before the pager's last word: heard at the ticks */
	double asked_ms, seen_ms;
} conns[CN_MAX_GPUS] = { [0 ... CN_MAX_GPUS - 1] = { .fd = -1 } };

static bool gone_said; /* the pager's absence was logged, and not since it answered */
static double soon_ms; /* a refusal's soon=, as monotonic ms; 0: none */
static const char *coming_what;

static const char done_msg[] = "done";

static void hang_up(struct conn *c, bool done)
{
	if (c->fd < 0)
		return;
	if (done && !c->settling) /* a settling one said it */
		send(c->fd, done_msg, sizeof(done_msg) - 1, MSG_DONTWAIT | MSG_NOSIGNAL);
	close(c->fd);
	c->fd = -1;
	c->settling = false;
	memset(&c->answer, 0, sizeof(c->answer));
}

/* Connected to the pager, its peer root (or this user): the fd, or -1 with why. */
static int dial(struct cn_agent *ag, char *why, size_t len)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	struct ucred cr;
	socklen_t l = sizeof(cr);
	const char *path = ag->cfg.pager_socket;
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);

	if (strlen(path) >= sizeof(a.sun_path) || fd < 0) {
		snprintf(why, len, "%s: not a socket it can use", path);
		goto fail;
	}
	snprintf(a.sun_path, sizeof(a.sun_path), "%s", path);
	if (connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
		snprintf(why, len, "%s: %s", path, strerror(errno));
		goto fail;
	}
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &l) < 0 ||
	    (cr.uid != 0 && cr.uid != getuid())) {
		snprintf(why, len, "%s: its listener is uid %u, neither root nor this user", path,
			 (unsigned)cr.uid);
		goto fail;
	}
	if (fd > 2)
		return fd;
	/* off 0-2, where a program with its stdio closed would have them */
	int moved = fcntl(fd, F_DUPFD_CLOEXEC, 3);

	close(fd);
	return moved;
fail:
	if (fd >= 0)
		close(fd);
	return -1;
}

static int ask(struct cn_agent *ag, struct conn *c, const struct cn_room_need *n, const char *what,
	       bool light, char *why, size_t len)
{
	char msg[CN_PAGERWIRE_MAX];
	int k;

	memset(&c->need, 0, sizeof(c->need));
	c->need.gpu = n->uuid;
	c->need.mib = (n->bytes + (1 << 20) - 1) >> 20;
	c->need.context = n->context;
	c->need.light = light;
	snprintf(c->need.what, sizeof(c->need.what), "%s", what);
	c->fd = dial(ag, why, len);
	k = cn_pagerwire_need_fmt(&c->need, msg, sizeof(msg));
	if (c->fd < 0 || k < 0 || send(c->fd, msg, (size_t)k, MSG_NOSIGNAL) != k) {
		if (c->fd >= 0)
			snprintf(why, len, "%s: %s", ag->cfg.pager_socket, strerror(errno));
		hang_up(c, false);
		return -ENOTCONN;
	}
	c->wait_said = c->made_said = false;
	c->asked_ms = c->seen_ms = cn_clock_ms();
	return 0;
}

/* "PID (USER, MIB MiB, idle S s, lightly), ..." of an answer, into out. */
static void napped_words(const struct cn_pagerwire_answer *a, char *out, size_t len)
{
	size_t o = 0;

	out[0] = '\0';
	for (int i = 0; i < a->n && o < len; i++)
		o += (size_t)snprintf(out + o, len - o, "%s%d (%s, %llu MiB, idle %.0f s%s)",
				      i ? ", " : "", a->napped[i].pid, a->napped[i].user,
				      (unsigned long long)a->napped[i].mib, a->napped[i].idle_s,
				      a->napped[i].light ? ", lightly" : "");
	if (!a->n)
		snprintf(out, len, "nobody (the room was there)");
}

/* The room made on c's GPU (a, its answer): counted, said, kept in the status; once. */
static void say_made(struct cn_agent *ag, struct conn *c, const struct cn_pagerwire_answer *a)
{
	char napped[700], line[1000];

	c->made_said = true;
	napped_words(a, napped, sizeof(napped));
	if (a->n)
		cn_report_count(ag, CN_REPORT_ROOMS_MADE);
	snprintf(line, sizeof(line),
		 "made room on GPU %d for %llu MiB (%s) through the node pager: napped %s in %.2f "
		 "s%s",
		 a->gpu, (unsigned long long)c->need.mib, c->need.what, napped,
		 (cn_clock_ms() - c->asked_ms) / 1000,
		 c->answer.kind == CN_PW_COMING ? ", lightly, as it copied in" : "");
	cn_log(&ag->cfg, CN_LOG_INFO, "%s", line);
	cn_report_room(ag, line);
	cn_report_write(ag);
}

/* The answers that came on c, read without waiting: 0 (read, or none yet), -ENOTCONN (gone). */
static int hear(struct cn_agent *ag, struct conn *c, char *why, size_t len)
{
	char msg[CN_PAGERWIRE_MAX + 1];
	struct cn_pagerwire_answer a;

	c->seen_ms = cn_clock_ms();
	for (;;) {
		ssize_t n = recv(c->fd, msg, sizeof(msg), MSG_DONTWAIT | MSG_TRUNC);

		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return 0;
		if (n <= 0 || (size_t)n > CN_PAGERWIRE_MAX ||
		    cn_pagerwire_answer_parse(msg, (size_t)n, &a) < 0) {
			snprintf(why, len,
				 "the node pager went away, or said what is not an answer");
			hang_up(c, false);
			return -ENOTCONN;
		}
		if (a.kind == CN_PW_WAIT && !c->wait_said) {
			char line[700];

			snprintf(
				line, sizeof(line),
				"%s: the node pager waits for room on that GPU, %.0f s at most: %s",
				c->need.what, a.seconds, a.why);
			cn_log(&ag->cfg, CN_LOG_INFO, "%s", line);
			cn_report_room(ag, line); /* the status says the wait too */
			cn_report_write(ag);
			c->wait_said = true;
		}
		if (a.kind == CN_PW_MADE && !c->made_said)
			say_made(ag, c, &a);
		if (a.kind != CN_PW_WAIT)
			c->answer = a;
	}
}

/* Each need's connection: asked when new, its answers heard. */
static int ask_all(struct cn_agent *ag, const struct cn_room_need *need, int n, const char *what,
		   bool overlap, char *why, size_t len)
{
	for (int i = 0; i < CN_MAX_GPUS; i++) {
		struct conn *c = &conns[i];
		bool wanted = i < n;

		if (c->fd >= 0 &&
		    (!wanted || c->settling || !cn_uuid_eq(&c->need.gpu, &need[i].uuid)))
			hang_up(c, true); /* a need of before, no longer this one */
		if (!wanted)
			continue;
		if (c->fd < 0 && ask(ag, c, &need[i], what, overlap && n == 1, why, len) < 0)
			return -ENOTCONN;
		if (hear(ag, c, why, len) < 0)
			return -ENOTCONN;
	}
	return 0;
}

int cn_nodepager_make(struct cn_agent *ag, const struct cn_room_need *need, int n, const char *what,
		      bool overlap, char *why, size_t len)
{
	int made = 0, r = 0;

	pthread_mutex_lock(&mu);
	soon_ms = 0;
	if (ask_all(ag, need, n, what, overlap, why, len) < 0) {
		for (int i = 0; i < CN_MAX_GPUS; i++)
			hang_up(&conns[i], true);
		if (!gone_said)
			cn_log(&ag->cfg, CN_LOG_INFO,
			       "the node pager cannot be asked (%s): room is made among this "
			       "user's "
			       "own programs",
			       why);
		gone_said = true;
		pthread_mutex_unlock(&mu);
		return -ENOTCONN;
	}
	gone_said = false;
	for (int i = 0; i < n; i++) {
		const struct conn *c = &conns[i];

		if (c->answer.kind == CN_PW_REFUSED) {
			char line[700];

			snprintf(why, len, "the node pager: %s", c->answer.why);
			snprintf(line, sizeof(line),
				 "no room made for %llu MiB (%s) by the node pager: %s",
				 (unsigned long long)c->need.mib, c->need.what, c->answer.why);
			cn_report_room(ag, line);
			cn_report_write(ag);
			soon_ms =
				c->answer.soon_s > 0 ? cn_clock_ms() + c->answer.soon_s * 1000 : 0;
			r = -1;
		}
		made += c->answer.kind == CN_PW_MADE ||
			(c->answer.kind == CN_PW_COMING && overlap && n == 1);
	}
	if (r < 0) {
		for (int i = 0; i < CN_MAX_GPUS; i++)
			hang_up(&conns[i], true);
	} else if (made == n) {
		coming_what = conns[0].answer.kind == CN_PW_COMING ? what : NULL;
	} else {
		snprintf(why, len, "the node pager makes room");
		r = -EAGAIN;
	}
	pthread_mutex_unlock(&mu);
	return r;
}

bool cn_nodepager_coming(struct cn_agent *ag)
{
	char why[200];
	bool coming;

	pthread_mutex_lock(&mu);
	coming = conns[0].fd >= 0 && conns[0].answer.kind == CN_PW_COMING &&
		 hear(ag, &conns[0], why, sizeof(why)) == 0 && conns[0].answer.kind == CN_PW_COMING;
	pthread_mutex_unlock(&mu);
	return coming;
}

void cn_nodepager_settle(struct cn_agent *ag)
{
	char why[200];

	pthread_mutex_lock(&mu);
	if (coming_what && conns[0].fd >= 0) {
		struct conn *c = &conns[0];

		/* the pager's last word on the naps it asked, as the wake is done */
		for (double until = cn_clock_ms() + 10000;
		     c->fd >= 0 && c->answer.kind == CN_PW_COMING && cn_clock_ms() < until;)
			if (hear(ag, c, why, sizeof(why)) == 0 && c->answer.kind == CN_PW_COMING)
				nanosleep(&(struct timespec){ 0, 5 * 1000000L }, NULL);
	}
	coming_what = NULL;
	pthread_mutex_unlock(&mu);
}

void cn_nodepager_release(void)
{
	pthread_mutex_lock(&mu);
	for (int i = 0; i < CN_MAX_GPUS; i++) {
		struct conn *c = &conns[i];

		/* the room used before the pager's last word (its try found the room the pager
		 * made, or copied in while the processes asked still copied out): done said, so
		 * that the pager asks nobody more, and the connection kept for that word, heard at
		 * the ticks (the pager closes it at once where it has none to say) */
		if (c->fd >= 0 && c->settling)
			continue;
		if (c->fd >= 0 && (c->answer.kind == 0 || c->answer.kind == CN_PW_COMING) &&
		    !c->made_said) {
			send(c->fd, done_msg, sizeof(done_msg) - 1, MSG_DONTWAIT | MSG_NOSIGNAL);
			c->settling = true;
			c->asked_ms = c->asked_ms ? c->asked_ms : cn_clock_ms();
			continue;
		}
		hang_up(c, true);
	}
	coming_what = NULL;
	pthread_mutex_unlock(&mu);
}

bool cn_nodepager_answered(struct cn_agent *ag)
{
	char why[200];
	bool all = true;

	pthread_mutex_lock(&mu);
	for (int i = 0; i < CN_MAX_GPUS; i++)
		if (conns[i].fd >= 0 && hear(ag, &conns[i], why, sizeof(why)) == 0)
			all &= conns[i].answer.kind != 0;
	pthread_mutex_unlock(&mu);
	return all;
}

double cn_nodepager_soon_ms(void)
{
	return soon_ms;
}

int cn_nodepager_timeout_ms(void)
{
	int open = 0;

	pthread_mutex_lock(&mu);
	for (int i = 0; i < CN_MAX_GPUS; i++)
		open += conns[i].fd >= 0;
	pthread_mutex_unlock(&mu);
	return open ? 500 : -1;
}

void cn_nodepager_tick(struct cn_agent *ag)
{
	double now = cn_clock_ms();
	char why[200];

	pthread_mutex_lock(&mu);
	for (int i = 0; i < CN_MAX_GPUS; i++) {
		struct conn *c = &conns[i];

		if (c->fd >= 0 && c->settling) {
			if (hear(ag, c, why, sizeof(why)) == 0 &&
			    (c->answer.kind == CN_PW_MADE || c->answer.kind == CN_PW_REFUSED ||
			     now - c->asked_ms > SETTLE_MS))
				hang_up(c, true);
		} else if (c->fd >= 0 && now - c->seen_ms > IDLE_CLOSE_MS) {
			hang_up(c, true);
		}
	}
	pthread_mutex_unlock(&mu);
}

void cn_nodepager_reset(void)
{
	pthread_mutex_init(&mu, NULL);
	for (int i = 0; i < CN_MAX_GPUS; i++) {
		if (conns[i].fd >= 0)
			close(conns[i].fd); /* the parent's need stays the parent's */
		conns[i].fd = -1;
	}
	gone_said = false;
	soon_ms = 0;
	coming_what = NULL;
}
