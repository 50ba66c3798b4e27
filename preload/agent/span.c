/* span: a rank's part in its NCCL job's cut across the nodes of its Slurm step, over TCP to the
 * job's leader, when no command line leads the cut (docs/FILES.md). Agent thread. */
#define _GNU_SOURCE
#include "agent/span.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "cn_hostlist.h"
#include "cn_spanwire.h"
#include "nccl/comms.h"
#include "agent/hub.h"

#define MAX_SECRETS 64
#define DIAL_MS	    300	 /* a connection made, or the next address */
#define GREET_MS    1000 /* the leader's greeting and its proof */

/* The step this rank is a task of, as Slurm's environment says. */
struct step {
	char job[64], node[256], first[256], nodes[4096];
};

/* The cut under way: the connection to its leader, and the leader itself when this rank is it.
 * File-scope: it outlives the action that opened it, and a forked child's atfork handler
 * (cn_span_after_fork) closes it, with no argument. */
static struct {
	int fd;
	struct cn_spanwire_in in;
	struct cn_hub *hub;
	char first[256];
} me = { .fd = -1 };

static bool step_of(struct step *s)
{
	const char *job = secure_getenv("SLURM_JOB_ID"), *step = secure_getenv("SLURM_STEP_ID"),
		   *nodes = secure_getenv("SLURM_STEP_NODELIST"),
		   *n = secure_getenv("SLURM_STEP_NUM_NODES"),
		   *node = secure_getenv("SLURMD_NODENAME");

	if (!job || !step || !nodes || !n || !node || atoi(n) < 2 ||
	    strlen(nodes) >= sizeof(s->nodes) ||
	    cn_hostlist_nth(nodes, 0, s->first, sizeof(s->first)) < 0)
		return false;
	snprintf(s->job, sizeof(s->job), "%s.%s", job, step);
	snprintf(s->node, sizeof(s->node), "%s", node);
	snprintf(s->nodes, sizeof(s->nodes), "%s", nodes);
	return true;
}

bool cn_span_wanted(unsigned port)
{
	struct step s;

	return port && step_of(&s);
}

static int high_fd(int fd)
{
	int n;

	if (fd < 0 || fd > 2)
		return fd;
	n = fcntl(fd, F_DUPFD_CLOEXEC, 3);
	close(fd);
	return n;
}

/* A connection to host's port (each of its addresses in turn, DIAL_MS each): its descriptor, or
 * -1. */
static int dial(const char *host, unsigned port)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *res = NULL;
	char service[16];
	int fd = -1, one = 1;

	snprintf(service, sizeof(service), "%u", port);
	if (getaddrinfo(host, service, &hints, &res) != 0)
		return -1;
	for (struct addrinfo *a = res; a && fd < 0; a = a->ai_next) {
		struct pollfd pf;
		int err = 0;
		socklen_t elen = sizeof(err);

		fd = high_fd(socket(a->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
		if (fd < 0)
			continue;
		pf = (struct pollfd){ fd, POLLOUT, 0 };
		if ((connect(fd, a->ai_addr, a->ai_addrlen) < 0 && errno != EINPROGRESS) ||
		    poll(&pf, 1, DIAL_MS) != 1 ||
		    getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &elen) < 0 || err) {
			close(fd);
			fd = -1;
		}
	}
	freeaddrinfo(res);
	if (fd >= 0)
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return fd;
}

/* The next line from the leader by until: 0; -1 at the connection's end; 1 at until. */
static int hear(char *line, size_t len, double until)
{
	for (;;) {
		struct pollfd pf = { me.fd, POLLIN, 0 };
		double left = until - cn_clock_ms();
		long k;

		if (cn_spanwire_take(&me.in, line, len))
			return 0;
		if (left <= 0)
			return 1;
		if (poll(&pf, 1, left > 100 ? 100 : (int)left + 1) <= 0)
			continue;
		k = cn_spanwire_fill(me.fd, &me.in);
		if (k == 0 || (k < 0 && k != -EAGAIN && k != -EINTR))
			return -1;
	}
}

static void hang_up(void)
{
	if (me.fd >= 0)
		close(me.fd);
	me.fd = -1;
	me.in.used = 0;
}

/* Over fd, a leader's greeting: the job's, and proved with a secret of ours after ours was.
 * 0 (the connection kept); -1 when it is not the job's leader (closed). */
static int join(int fd, const struct step *st, uint8_t (*secrets)[CN_SHA256_LEN], int n)
{
	char line[CN_SPANWIRE_LINE], job[64], nonce[CN_SPANWIRE_NONCE_HEX + 1],
		mine[CN_SPANWIRE_NONCE_HEX + 1], proof[CN_SPANWIRE_PROOF_HEX + 1], back[64];
	double until = cn_clock_ms() + GREET_MS;
	int version, pid = (int)getpid();
	size_t o;

	me.fd = fd;
	me.in.used = 0;
	if (hear(line, sizeof(line), until) != 0 ||
	    sscanf(line, "cut-hub %d %63s %32s", &version, job, nonce) != 3 ||
	    version != CN_SPANWIRE_VERSION || strcmp(job, st->job) != 0 ||
	    cn_spanwire_nonce(mine) < 0)
		goto no;
	o = (size_t)snprintf(line, sizeof(line), "rank %s %d %s ", st->node, pid, mine);
	for (int i = 0; i < n && o + CN_SPANWIRE_PROOF_HEX + 2 < sizeof(line); i++) {
		cn_spanwire_proof(secrets[i], "rank", st->job, nonce, mine, st->node, pid, proof);
		o += (size_t)snprintf(line + o, sizeof(line) - o, "%s%s", i ? "," : "", proof);
	}
	snprintf(line + o, sizeof(line) - o, "\n");
	if (cn_spanwire_send(fd, line) < 0 || hear(line, sizeof(line), until) != 0 ||
	    sscanf(line, "welcome %63s", back) != 1)
		goto no;
	for (int i = 0; i < n; i++) {
		cn_spanwire_proof(secrets[i], "hub", st->job, nonce, mine, st->node, pid, proof);
		if (cn_spanwire_same(back, proof))
			return 0;
	}
no:
	hang_up();
	return -1;
}

/* Connected to the job's leader (started here, when this rank is on the step's first node and
 * finds none) by until; -1 with why. */
static int open_session(unsigned base, double until, char *why, size_t wlen)
{
	static uint8_t secrets[MAX_SECRETS][CN_SHA256_LEN];
	int n = cn_comms_secrets(secrets, MAX_SECRETS);
	struct step st;
	bool first;

	if (!step_of(&st) || !n) {
		snprintf(why, wlen, "%s",
			 n ? "Slurm's environment does not say the step's nodes"
			   : "its communicators have nothing to prove it a rank of the job");
		return -1;
	}
	snprintf(me.first, sizeof(me.first), "%s", st.first);
	first = strcmp(st.node, st.first) == 0;
	while (cn_clock_ms() < until) {
		struct timespec tick = { 0, 20 * 1000 * 1000 };

		for (int i = 0; i < CN_SPANWIRE_TRIES; i++) {
			unsigned port = cn_spanwire_port(base, st.job, i);
			int fd;

			/* Taken (another rank's here, or another program's): it is dialled. */
			if (first && !me.hub)
				me.hub = cn_hub_start(port, st.job, st.nodes, secrets, n);
			if ((fd = dial(st.first, port)) >= 0 && join(fd, &st, secrets, n) == 0)
				return 0;
		}
		nanosleep(&tick, NULL);
	}
	snprintf(why, wlen,
		 "no answer from node %s, where the job's cut is led (TCP ports %u-%u), within the "
		 "bound",
		 st.first, base, base + CN_SPANWIRE_PORTS - 1);
	return -1;
}

int cn_span_answer(unsigned port, const char *phase, const char *text, unsigned hub_ms,
		   unsigned wait_ms, bool final, char *buf, size_t len, char *why, size_t wlen)
{
	double until = cn_clock_ms() + wait_ms;
	char line[CN_SPANWIRE_LINE], head[128], got[32];
	int n = 0, k = 0, r;
	size_t o = 0;

	if (me.fd < 0 && open_session(port, until, why, wlen) < 0)
		return -1;
	for (const char *p = text; *p; p++)
		n += *p == '\n';
	snprintf(head, sizeof(head), "said %s %u %d\n", phase, hub_ms, n);
	if (cn_spanwire_send(me.fd, head) < 0 || cn_spanwire_send(me.fd, text) < 0) {
		snprintf(why, wlen, "the connection to node %s, where the job's cut is led, broke",
			 me.first);
		hang_up();
		return -1;
	}
	while ((r = hear(line, sizeof(line), until)) == 0) {
		if (strncmp(line, "abort ", 6) == 0) {
			snprintf(why, wlen, "%s", line + 6);
			hang_up();
			return -1;
		}
		if (sscanf(line, "answer %31s %d", got, &k) == 2 && strcmp(got, phase) == 0)
			break;
	}
	buf[0] = '\0';
	for (; r == 0 && k > 0; k--)
		if ((r = hear(line, sizeof(line), until)) == 0)
			o += (size_t)snprintf(buf + o, o < len ? len - o : 0, "%s\n", line);
	if (r == 0) {
		if (final)
			cn_span_end();
		return 0;
	}
	if (r < 0) {
		snprintf(why, wlen, "the rank that leads the job's cut, on node %s, is gone",
			 me.first);
		hang_up();
	} else {
		snprintf(why, wlen,
			 "no word in %u ms from the rank that leads the job's cut, on node %s",
			 wait_ms, me.first);
	}
	return -1;
}

void cn_span_give_up(const char *why)
{
	char line[600];

	if (me.fd >= 0) {
		snprintf(line, sizeof(line), "giveup %.500s", why);
		line[strcspn(line, "\n")] = '\0';
		strcat(line, "\n");
		cn_spanwire_send(me.fd, line);
	}
	cn_span_end();
}

void cn_span_end(void)
{
	hang_up();
	cn_hub_stop(me.hub);
	me.hub = NULL;
}

void cn_span_after_fork(void)
{
	hang_up();
	cn_hub_forget(me.hub);
	me.hub = NULL;
}
