/* cudanap-pager: the node pager, one per node, run as root: its policy, its socket, then one loop
 * over the socket, the needs' turns and the ledger until SIGTERM (SIGHUP reads the policy again).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "clock.h"
#include "cn_config.h"
#include "pager.h"

struct cn_pagerconf pg_policy;

static const char usage[] =
	"usage: cudanap-pager [-c FILE]\n"
	"\n"
	"The node pager: programs under cudanap that need GPU memory ask it, and it naps idle\n"
	"programs of every user on that GPU for them, as the policy in FILE allows "
	"(default\n" CN_PAGER_POLICY
	"; without it, the defaults). Run as root, one per node; SIGHUP reads\n"
	"FILE again. 'man cudanap-pager' has the policy's keys.\n";

static int load(const char *path, bool optional)
{
	char err[CN_ERR_LEN];

	if (optional && access(path, F_OK) != 0) {
		cn_pagerconf_defaults(&pg_policy);
		log_info("no %s: the defaults (every user's share whole, min_idle_s %u)", path,
			 pg_policy.min_idle_s);
		return 0;
	}
	if (cn_pagerconf_load(&pg_policy, path, err, sizeof(err)) < 0) {
		log_info("%s", err);
		return -1;
	}
	return 0;
}

/* SIGHUP: the policy read again; a broken one keeps the last. */
static void reload(const char *path, bool optional)
{
	struct cn_pagerconf was = pg_policy;

	if (load(path, optional) < 0) {
		pg_policy = was;
		log_info("the policy stays as it was: fix %s and send SIGHUP again", path);
		return;
	}
	log_info("the policy read again from %s", path);
}

static int signals(void)
{
	sigset_t s;

	sigemptyset(&s);
	sigaddset(&s, SIGTERM);
	sigaddset(&s, SIGINT);
	sigaddset(&s, SIGHUP);
	sigprocmask(SIG_BLOCK, &s, NULL);
	signal(SIGPIPE, SIG_IGN);
	return signalfd(-1, &s, SFD_CLOEXEC | SFD_NONBLOCK);
}

int main(int argc, char **argv)
{
	const char *path = CN_PAGER_POLICY;
	bool optional = true;
	int c, sfd;

	while ((c = getopt(argc, argv, "c:h")) != -1) {
		if (c == 'c') {
			path = optarg;
			optional = false;
		} else {
			fputs(usage, c == 'h' ? stdout : stderr);
			return c == 'h' ? 0 : 2;
		}
	}
	if (optind != argc) {
		fputs(usage, stderr);
		return 2;
	}
	if (load(path, optional) < 0)
		return 78;
	if (geteuid() != 0)
		log_info("not run as root: only this user's programs can be napped");
	sfd = signals();
	if (sfd < 0 || clients_listen(pg_policy.socket) < 0)
		return 1;
	log_info("listening on %s (policy %s: min_idle_s %u, when_full %s)", pg_policy.socket,
		 pg_policy.path[0] ? pg_policy.path : "the defaults", pg_policy.min_idle_s,
		 pg_policy.wait ? "wait" : "fail");
	ledger_tick(cn_clock_ms(), true);
	for (;;) {
		struct pollfd pf[300];
		int fds[299], n = clients_fds(fds, 299), timeout = jobs_tick(cn_clock_ms());
		struct signalfd_siginfo si;

		pf[0] = (struct pollfd){ .fd = sfd, .events = POLLIN };
		for (int i = 0; i < n; i++)
			pf[i + 1] = (struct pollfd){ .fd = fds[i], .events = POLLIN };
		if (poll(pf, (nfds_t)n + 1, timeout) < 0 && errno != EINTR)
			break;
		if ((pf[0].revents & POLLIN) && read(sfd, &si, sizeof(si)) == sizeof(si)) {
			if (si.ssi_signo != SIGHUP)
				break;
			reload(path, optional);
		}
		for (int i = 0; i < n; i++)
			if (pf[i + 1].revents)
				clients_ready(pf[i + 1].fd);
		clients_tick(cn_clock_ms());
		ledger_tick(cn_clock_ms(), false);
	}
	clients_close_all();
	ledger_tick(cn_clock_ms(), true);
	log_info("stopped");
	return 0;
}
