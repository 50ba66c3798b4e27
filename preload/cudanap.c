/* cudanap: the preload's entry points: constructor, signal handler, fork and exit handling.
 *
 * The constructor loads the INI, forks the controller, starts the agent thread and only then
 * installs the handlers, so that no signal is ever accepted without someone to act on it. The
 * handler writes one byte to the agent's wake pipe and does nothing else. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <unistd.h>

#include "agent.h"
#include "cn_config.h"
#include "controller.h"
#include "staging.h"

/* Read by the handler: plain words written once before the handler is installed. */
static pid_t owner = -1;
static int wake_wr = -1;
static int agent_fds[2] = { -1, -1 }; /* the agent's wake pipe end and controller socket */
static int sig_suspend, sig_resume;
static struct sigaction chained[2]; /* what the app had before us */

static void on_signal(int sig, siginfo_t *info, void *uc)
{
	int saved = errno;
	struct sigaction *prev = &chained[sig == sig_suspend ? 0 : 1];
	char b = sig_suspend == sig_resume ? CN_WAKE_TOGGLE
		 : sig == sig_suspend	   ? CN_WAKE_SUSPEND
					   : CN_WAKE_RESUME;

	/* A child forked without exec shares our pipe's other end with nobody: stay silent. */
	if (wake_wr >= 0 && getpid() == owner && write(wake_wr, &b, 1) < 0) {
		/* Pipe full: the agent has a backlog, and it folds bytes anyway. */
	}
	errno = saved;
	if (prev->sa_flags & SA_SIGINFO) {
		if (prev->sa_sigaction)
			prev->sa_sigaction(sig, info, uc);
	} else if (prev->sa_handler != SIG_DFL && prev->sa_handler != SIG_IGN) {
		prev->sa_handler(sig);
	}
	errno = saved;
}

static void install(int sig, struct sigaction *prev)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_signal;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	sigaction(sig, &sa, prev);
}

static void after_fork_child(void)
{
	/* The child must never reach its parent's agent or controller. */
	int w = wake_wr;

	wake_wr = -1;
	if (w >= 0)
		close(w);
	/* Forget the numbers too: the app reuses them, and a grandchild runs this again. */
	for (int i = 0; i < 2; i++) {
		if (agent_fds[i] >= 0)
			close(agent_fds[i]);
		agent_fds[i] = -1;
	}
}

/* Keep our descriptors off 0-2 even when the app started with stdio closed. */
static int high_fd(int fd)
{
	int n;

	if (fd > 2)
		return fd;
	n = fcntl(fd, F_DUPFD_CLOEXEC, 3);
	close(fd);
	return n;
}

static void startup_error(const char *msg)
{
	dprintf(STDERR_FILENO, "cudanap: %s\n", msg);
	_exit(78); /* EX_CONFIG */
}

__attribute__((constructor)) static void cn_init(void)
{
	static struct cn_config cfg;
	const char *env = secure_getenv("CUDANAP_CONFIG");
	char err[CN_ERR_LEN], abs[PATH_MAX];
	int p[2], sock, r;

	cn_staging_init();
	if (getauxval(AT_SECURE) || (env && strcmp(env, "off") == 0))
		return;
	/* The agent re-reads the file at resume, possibly after the app has changed directory. */
	if (env && *env && realpath(env, abs))
		setenv("CUDANAP_CONFIG", abs, 1);
	if (cn_config_load_env(&cfg, err, sizeof(err)) < 0 ||
	    cn_status_dir_prepare(cfg.status_dir, err, sizeof(err)) < 0)
		startup_error(err);

	if (pipe2(p, O_CLOEXEC | O_NONBLOCK) < 0) {
		dprintf(STDERR_FILENO, "cudanap: pipe: %s; suspend/resume disabled\n",
			strerror(errno));
		return;
	}
	p[0] = high_fd(p[0]);
	p[1] = high_fd(p[1]);
	r = cn_controller_spawn(&sock);
	if (r == 0)
		sock = high_fd(sock);
	if (r == 0)
		r = cn_agent_start(&cfg, p[0], sock);
	if (r < 0) {
		dprintf(STDERR_FILENO, "cudanap: cannot start: %s; suspend/resume disabled\n",
			strerror(-r));
		return;
	}
	owner = getpid();
	agent_fds[0] = p[0];
	agent_fds[1] = sock;
	sig_suspend = cfg.suspend_signal;
	sig_resume = cfg.resume_signal;
	wake_wr = p[1];
	install(sig_suspend, &chained[0]);
	if (sig_resume != sig_suspend)
		install(sig_resume, &chained[1]);
	else
		chained[1] = chained[0];
	pthread_atfork(NULL, NULL, after_fork_child);
}

__attribute__((destructor)) static void cn_fini(void)
{
	if (owner == getpid())
		cn_agent_exit();
}
