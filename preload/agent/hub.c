/* hub: the leader of an NCCL job's cut across the nodes of its Slurm step: a thread of one rank's
 * on the step's first node, living through one cut (docs/FILES.md). */
#define _GNU_SOURCE
#include "agent/hub.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "clock.h"
#include "cn_cut.h"
#include "cn_hostlist.h"
#include "cn_words.h"

#define MAX_RANKS  1024
#define MAX_LINES  4096
#define RANK_LINES 64	/* a rank's communicators */
#define HELLO_MS   2000 /* for a connection to prove it is a rank */
#define POLL_MS	   20

enum { HELLO, IN, SAID, ANSWERED, GONE };

struct rank {
	int fd, state;
	double since;
	char node[256], nonce[CN_SPANWIRE_NONCE_HEX + 1];
	int pid;
	char phase[32];
	int expect; /* lines of its said still to come */
	int n_lines;
	struct cn_cut_line lines[RANK_LINES];
	struct cn_spanwire_in in;
};

struct cn_hub {
	int lfd, stop[2];
	pthread_t thread;
	char job[64], nonce[CN_SPANWIRE_NONCE_HEX + 1], nodes[4096];
	uint8_t (*secrets)[CN_SHA256_LEN];
	int n_secrets;
	struct rank *ranks[MAX_RANKS];
	int n;
	char phase[32]; /* the step of the cut under way, "" before the first */
	bool answered;	/* that step's answer went out */
	double deadline;
	bool over; /* the cut is made or given up: the thread ends */
};

static void drop(struct rank *r)
{
	if (r->fd >= 0)
		close(r->fd);
	r->fd = -1;
	r->state = GONE;
}

/* Every rank still there told to give up, and the cut over. */
static void abort_all(struct cn_hub *h, const char *why)
{
	char line[1200];

	snprintf(line, sizeof(line), "abort %s\n", why);
	for (int i = 0; i < h->n; i++)
		if (h->ranks[i]->state != GONE && h->ranks[i]->state != HELLO)
			cn_spanwire_send(h->ranks[i]->fd, line);
	h->over = true;
}

/* "rank NODE PID NONCE PROOF[,PROOF...]": one of the proofs made with one of our secrets, and
 * ours sent back with it. */
static void hello(struct cn_hub *h, struct rank *r, char *line)
{
	char list[CN_SPANWIRE_LINE], mine[CN_SPANWIRE_PROOF_HEX + 1], back[128],
		*proofs[RANK_LINES];
	int n = 0;

	if (sscanf(line, "rank %255s %d %32s %8191s", r->node, &r->pid, r->nonce, list) != 4) {
		drop(r);
		return;
	}
	for (char *save, *p = strtok_r(list, ",", &save); p && n < RANK_LINES;
	     p = strtok_r(NULL, ",", &save))
		proofs[n++] = p;
	for (int s = 0; s < h->n_secrets; s++) {
		cn_spanwire_proof(h->secrets[s], "rank", h->job, h->nonce, r->nonce, r->node,
				  r->pid, mine);
		for (int k = 0; k < n; k++)
			if (cn_spanwire_same(proofs[k], mine)) {
				cn_spanwire_proof(h->secrets[s], "hub", h->job, h->nonce, r->nonce,
						  r->node, r->pid, mine);
				snprintf(back, sizeof(back), "welcome %s\n", mine);
				cn_spanwire_send(r->fd, back);
				r->state = IN;
				return;
			}
	}
	cn_spanwire_send(r->fd, "refused no communicator of this rank is the leader's\n");
	drop(r);
}

/* A rank's said: its step, its bound, then its lines; it may open the next step of the cut. */
static void said(struct cn_hub *h, struct rank *r, const char *line)
{
	unsigned ms;

	if (sscanf(line, "said %31s %u %d", r->phase, &ms, &r->expect) != 3 || r->expect < 0 ||
	    r->expect > RANK_LINES) {
		drop(r);
		return;
	}
	if (!h->phase[0] || (h->answered && strcmp(h->phase, r->phase) != 0)) {
		snprintf(h->phase, sizeof(h->phase), "%s", r->phase);
		h->answered = false;
		h->deadline = cn_clock_ms() + ms;
	} else if (strcmp(h->phase, r->phase) != 0) {
		cn_spanwire_send(r->fd, "abort the job's ranks are at another step of the cut\n");
		drop(r);
		return;
	}
	r->n_lines = 0;
	r->state = r->expect ? IN : SAID;
}

static void one_line(struct cn_hub *h, int i, char *line)
{
	struct rank *r = h->ranks[i];
	char why[600];

	if (r->state == HELLO) {
		hello(h, r, line);
	} else if (strncmp(line, "giveup ", 7) == 0) {
		snprintf(why, sizeof(why), "rank %d on node %s gave up: %s", r->pid, r->node,
			 line + 7);
		drop(r);
		abort_all(h, why);
	} else if (r->expect > 0) {
		r->n_lines = cn_cut_parse(line, i, r->lines, r->n_lines, RANK_LINES);
		if (--r->expect == 0)
			r->state = SAID;
	} else if (strncmp(line, "said ", 5) == 0) {
		said(h, r, line);
	}
}

/* The lines of the ranks that said this step, into lines; how many. */
static int gather(struct cn_hub *h, struct cn_cut_line *lines)
{
	int n = 0;

	for (int i = 0; i < h->n; i++) {
		struct rank *r = h->ranks[i];

		if (r->state != SAID || strcmp(r->phase, h->phase) != 0)
			continue;
		for (int k = 0; k < r->n_lines && n < MAX_LINES; k++)
			lines[n++] = r->lines[k];
	}
	return n;
}

/* Every rank of the step answered: its counts to reach (the most any rank issued, base/cut.c),
 * or the go. The go is the cut's last word. */
static void answer(struct cn_hub *h, const struct cn_cut_line *lines, int n)
{
	bool counts = strcmp(h->phase, CN_NOTE_NCCL_CUT) == 0;

	for (int i = 0; i < h->n; i++) {
		struct rank *r = h->ranks[i];
		char text[CN_SPANWIRE_LINE], head[64];
		int k = 0;

		if (r->state != SAID || strcmp(r->phase, h->phase) != 0)
			continue;
		if (counts)
			cn_cut_targets(lines, n, i, text, sizeof(text));
		else
			snprintf(text, sizeof(text), "%s", CN_NCCL_GO);
		for (const char *p = text; *p; p++)
			k += *p == '\n';
		snprintf(head, sizeof(head), "answer %s %d\n", h->phase, k);
		if (cn_spanwire_send(r->fd, head) < 0 || cn_spanwire_send(r->fd, text) < 0)
			drop(r);
		else
			r->state = ANSWERED;
	}
	h->answered = true;
	h->over = !counts;
}

/* At the bound: what is missing, the nodes heard nothing from first. */
static void missing(struct cn_hub *h, const char *whole_why, char *why, size_t len)
{
	int nodes = cn_hostlist_count(h->nodes);
	size_t o = 0;

	why[0] = '\0';
	for (int k = 0; k < nodes; k++) {
		char name[256];
		bool heard = false;

		if (cn_hostlist_nth(h->nodes, k, name, sizeof(name)) < 0)
			continue;
		for (int i = 0; i < h->n && !heard; i++)
			heard = strcmp(h->ranks[i]->node, name) == 0 &&
				h->ranks[i]->state == SAID &&
				strcmp(h->ranks[i]->phase, h->phase) == 0;
		if (!heard)
			o += (size_t)snprintf(why + o, o < len ? len - o : 0, "%s%s",
					      o ? ", " : "no word from node ", name);
	}
	if (o)
		snprintf(why + o, o < len ? len - o : 0, " within the bound (%s)", whole_why);
	else
		snprintf(why, len, "%s", whole_why);
}

/* Where the step stands: answered once whole, given up at the bound. */
static void judge(struct cn_hub *h)
{
	static struct cn_cut_line lines[MAX_LINES];
	char whole_why[400] = "", why[1000];
	int n;

	if (!h->phase[0] || h->answered)
		return;
	n = gather(h, lines);
	if (n && cn_cut_whole(lines, n, whole_why, sizeof(whole_why))) {
		answer(h, lines, n);
	} else if (cn_clock_ms() >= h->deadline) {
		missing(h, whole_why[0] ? whole_why : "no rank said its lines", why, sizeof(why));
		abort_all(h, why);
	}
}

static void accept_one(struct cn_hub *h)
{
	int fd = accept4(h->lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK), one = 1;
	struct rank *r;
	char greeting[160];

	if (fd < 0)
		return;
	if (h->n == MAX_RANKS || !(r = calloc(1, sizeof(*r)))) {
		close(fd);
		return;
	}
	if (fd < 3) { /* our descriptors stay off 0-2, the app's stdio */
		int high = fcntl(fd, F_DUPFD_CLOEXEC, 3);

		close(fd);
		fd = high;
	}
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	r->fd = fd;
	r->state = fd >= 0 ? HELLO : GONE;
	r->since = cn_clock_ms();
	snprintf(greeting, sizeof(greeting), "cut-hub %d %s %s\n", CN_SPANWIRE_VERSION, h->job,
		 h->nonce);
	if (fd >= 0)
		cn_spanwire_send(fd, greeting);
	h->ranks[h->n++] = r;
}

/* What rank i sent, read and acted on; its connection's end before the cut was made ends the cut
 * for all. */
static void serve(struct cn_hub *h, int i)
{
	struct rank *r = h->ranks[i];
	char line[CN_SPANWIRE_LINE], why[600];
	long k = cn_spanwire_fill(r->fd, &r->in);

	while (r->state != GONE && cn_spanwire_take(&r->in, line, sizeof(line)))
		one_line(h, i, line);
	if (k == 0 || (k < 0 && k != -EAGAIN && k != -EINTR)) {
		bool mid = r->state != HELLO && r->state != GONE && !h->over;

		drop(r);
		if (mid) {
			snprintf(why, sizeof(why),
				 "rank %d on node %s is gone (its connection ended)", r->pid,
				 r->node);
			abort_all(h, why);
		}
	}
}

static void *run(void *arg)
{
	struct cn_hub *h = arg;
	struct pollfd pf[MAX_RANKS + 2];

	while (!h->over) {
		int n = 0;

		pf[n++] = (struct pollfd){ h->lfd, POLLIN, 0 };
		pf[n++] = (struct pollfd){ h->stop[0], POLLIN, 0 };
		for (int i = 0; i < h->n; i++)
			pf[n++] = (struct pollfd){ h->ranks[i]->fd, POLLIN, 0 };
		if (poll(pf, (nfds_t)n, POLL_MS) > 0) {
			if (pf[1].revents) {
				abort_all(h, "the rank that leads the cut has ended its part");
				break;
			}
			if (pf[0].revents)
				accept_one(h);
			for (int i = 0; i < h->n && !h->over; i++)
				if (pf[i + 2].revents && h->ranks[i]->fd >= 0)
					serve(h, i);
		}
		for (int i = 0; i < h->n; i++)
			if (h->ranks[i]->state == HELLO &&
			    cn_clock_ms() - h->ranks[i]->since > HELLO_MS)
				drop(h->ranks[i]);
		if (!h->over)
			judge(h);
	}
	/* The last words are out: the ranks read them before their connection's end. */
	close(h->lfd);
	h->lfd = -1;
	for (int i = 0; i < h->n; i++)
		if (h->ranks[i]->fd >= 0) {
			shutdown(h->ranks[i]->fd, SHUT_WR);
			drop(h->ranks[i]);
		}
	return NULL;
}

/* A socket listening on port, on every address (IPv6 with IPv4 mapped, or IPv4 alone). */
static int listen_on(unsigned port)
{
	struct sockaddr_in6 a6 = { .sin6_family = AF_INET6,
				   .sin6_port = htons((uint16_t)port),
				   .sin6_addr = IN6ADDR_ANY_INIT };
	struct sockaddr_in a4 = { .sin_family = AF_INET,
				  .sin_port = htons((uint16_t)port),
				  .sin_addr.s_addr = htonl(INADDR_ANY) };
	int one = 1, zero = 0, fd = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	bool six = fd >= 0;

	if (!six)
		fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd >= 0 && fd < 3) {
		int high = fcntl(fd, F_DUPFD_CLOEXEC, 3);

		close(fd);
		fd = high;
	}
	if (fd < 0)
		return -errno;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (six)
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
	if ((six ? bind(fd, (struct sockaddr *)&a6, sizeof(a6))
		 : bind(fd, (struct sockaddr *)&a4, sizeof(a4))) < 0 ||
	    listen(fd, 128) < 0) {
		int e = errno;

		close(fd);
		return -e;
	}
	return fd;
}

struct cn_hub *cn_hub_start(unsigned port, const char *job, const char *nodes,
			    uint8_t (*secrets)[CN_SHA256_LEN], int n_secrets)
{
	struct cn_hub *h = calloc(1, sizeof(*h));
	int e = ENOMEM;

	if (!h || !(h->secrets = malloc((size_t)(n_secrets ? n_secrets : 1) * CN_SHA256_LEN)))
		goto fail;
	memcpy(h->secrets, secrets, (size_t)n_secrets * CN_SHA256_LEN);
	h->n_secrets = n_secrets;
	h->stop[0] = h->stop[1] = -1;
	snprintf(h->job, sizeof(h->job), "%s", job);
	snprintf(h->nodes, sizeof(h->nodes), "%s", nodes);
	if ((e = -cn_spanwire_nonce(h->nonce)) != 0)
		goto fail;
	if ((h->lfd = listen_on(port)) < 0) {
		e = -h->lfd;
		goto fail;
	}
	if (pipe2(h->stop, O_CLOEXEC) < 0 || (e = pthread_create(&h->thread, NULL, run, h)) != 0) {
		e = e ? e : errno;
		close(h->lfd);
		goto fail;
	}
	return h;
fail:
	if (h && h->stop[0] >= 0) {
		close(h->stop[0]);
		close(h->stop[1]);
	}
	if (h)
		free(h->secrets);
	free(h);
	errno = e;
	return NULL;
}

static void release(struct cn_hub *h)
{
	for (int i = 0; i < h->n; i++) {
		if (h->ranks[i]->fd >= 0)
			close(h->ranks[i]->fd);
		free(h->ranks[i]);
	}
	close(h->stop[0]);
	close(h->stop[1]);
	free(h->secrets);
	free(h);
}

void cn_hub_stop(struct cn_hub *h)
{
	if (!h)
		return;
	if (write(h->stop[1], "x", 1) < 0) {
		/* the thread ends at the cut's end or its bound anyway */
	}
	pthread_join(h->thread, NULL);
	release(h);
}

void cn_hub_forget(struct cn_hub *h)
{
	if (!h)
		return;
	if (h->lfd >= 0)
		close(h->lfd);
	release(h);
}
