/* cudanap: the preload's entry points: constructor, signal handler, the app's own handlers, forks.
 *
 * The constructor loads the INI, starts the agent thread and only then installs the handlers, so
 * that no signal is ever accepted without someone to act on it. The handler writes one byte to
 * the agent's wake pipe, then calls the handler the app wants for that signal, and does nothing
 * else.
 *
 * The app keeps its say over our signals without taking them from us: its sigaction() and
 * signal() calls for them are recorded here as what the app sees and wants, and never reach the
 * kernel. A forked child gets an agent of its own. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#include "agent.h"
#include "answers.h"
#include "cn_config.h"
#include "cn_nccl.h"
#include "comms.h"
#include "copy.h"
#include "fns.h"
#include "gate.h"
#include "turns.h"
#include "launch.h"
#include "hibernate.h"
#include "ipc.h"
#include "managed.h"
#include "staging.h"

#define EXPORT __attribute__((visibility("default")))

/* Read by the handler: plain words, written before the handler is installed or in a fork child. */
static pid_t owner = -1;
static int wake_wr = -1;
static int sig_suspend, sig_resume, sig_prepare; /* sig_prepare 0: none */
static bool chain;
static atomic_bool armed; /* our handlers are installed: the app's calls for them stop here */

/* What the app wants for each of our signals, as the app set it. Written by the app's calls,
 * possibly from its own handlers, so without locks: each write fills the next of a few copies
 * and then publishes its number, and a handler reads a copy that is not being written. */
#define COPIES 8
static struct wish {
	struct sigaction copy[COPIES];
	atomic_uint cur, next;
} wishes[3]; /* suspend, resume, prepare */

typedef int (*sigaction_fn)(int, const struct sigaction *, struct sigaction *);
static _Atomic(sigaction_fn) real_sigaction_p;

static int real_sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	sigaction_fn f = atomic_load(&real_sigaction_p);

	if (!f) {
		f = (sigaction_fn)dlsym(RTLD_NEXT, "sigaction");
		if (!f) {
			errno = ENOSYS;
			return -1;
		}
		atomic_store(&real_sigaction_p, f);
	}
	return f(sig, act, old);
}

static struct wish *slot_of(int sig)
{
	return sig == sig_suspend		   ? &wishes[0]
	       : sig == sig_resume		   ? &wishes[1]
	       : sig_prepare && sig == sig_prepare ? &wishes[2]
						   : NULL;
}

static struct wish *wish_of(int sig)
{
	return atomic_load(&armed) ? slot_of(sig) : NULL;
}

static void wish_get(struct wish *w, struct sigaction *out)
{
	*out = w->copy[atomic_load(&w->cur) % COPIES];
}

static void wish_set(struct wish *w, const struct sigaction *in)
{
	unsigned n = atomic_fetch_add(&w->next, 1) + 1;

	w->copy[n % COPIES] = *in;
	atomic_store(&w->cur, n);
}

/* The app's handler, as the kernel would have run it: under the mask of the interrupted code plus
 * the app's sa_mask (and the signal, unless SA_NODEFER), SIG_DFL and SIG_IGN doing nothing (the
 * signal is ours, never fatal), SA_RESETHAND honoured once. */
static void call_app(struct wish *w, int sig, siginfo_t *info, void *uc)
{
	const ucontext_t *u = uc;
	struct sigaction a;
	sigset_t m, old;

	wish_get(w, &a);
	if (a.sa_flags & SA_SIGINFO ? !a.sa_sigaction
				    : a.sa_handler == SIG_DFL || a.sa_handler == SIG_IGN)
		return;
	if (a.sa_flags & SA_RESETHAND) {
		struct sigaction dfl;

		memset(&dfl, 0, sizeof(dfl));
		dfl.sa_handler = SIG_DFL;
		wish_set(w, &dfl);
	}
	sigorset(&m, &u->uc_sigmask, &a.sa_mask);
	if (!(a.sa_flags & SA_NODEFER))
		sigaddset(&m, sig);
	pthread_sigmask(SIG_SETMASK, &m, &old);
	if (a.sa_flags & SA_SIGINFO)
		a.sa_sigaction(sig, info, uc);
	else
		a.sa_handler(sig);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
}

void cn_wake_agent(char b)
{
	int saved = errno;

	if (wake_wr >= 0 && getpid() == owner && write(wake_wr, &b, 1) < 0) {
		/* Pipe full: the agent has a backlog, and it folds bytes anyway. */
	}
	errno = saved;
}

static void on_signal(int sig, siginfo_t *info, void *uc)
{
	int saved = errno;
	/* cudanap prepare (and a query) queue the suspend signal with a value of ours: meant for us
	 * alone. */
	int v = info && info->si_code == SI_QUEUE ? info->si_value.sival_int : 0;
	bool queued = v == CN_SIGVAL_PREPARE || v == CN_SIGVAL_QUERY || v == CN_SIGVAL_NAP;
	struct wish *w = slot_of(sig);
	char b = v == CN_SIGVAL_QUERY				? CN_WAKE_QUERY
		 : v == CN_SIGVAL_NAP				? CN_WAKE_NAP
		 : v == CN_SIGVAL_PREPARE || sig == sig_prepare ? CN_WAKE_PREPARE
		 : sig_suspend == sig_resume			? CN_WAKE_TOGGLE
		 : sig == sig_suspend				? CN_WAKE_SUSPEND
								: CN_WAKE_RESUME;

	/* In a child whose agent could not start, stay silent. */
	cn_wake_agent(b);
	if (chain && w && !queued)
		call_app(w, sig, info, uc);
	errno = saved;
}

/* ---- the app's calls for our signals ---- */

EXPORT int sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	struct wish *w = wish_of(sig);
	struct sigaction was;

	if (!w)
		return real_sigaction(sig, act, old);
	wish_get(w, &was);
	if (act)
		wish_set(w, act);
	if (old)
		*old = was;
	return 0;
}

static sighandler_t set_handler(int sig, sighandler_t h, int flags)
{
	struct sigaction sa, old;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = h;
	sa.sa_flags = flags;
	sigemptyset(&sa.sa_mask);
	if (sigaction(sig, &sa, &old) < 0)
		return SIG_ERR;
	return old.sa_handler;
}

/* glibc's signal() has BSD semantics; __sysv_signal is what strict ISO C builds call. */
EXPORT sighandler_t signal(int sig, sighandler_t h)
{
	return set_handler(sig, h, SA_RESTART);
}

sighandler_t bsd_signal(int sig, sighandler_t h); /* glibc declares it only for old X/Open */
EXPORT sighandler_t bsd_signal(int sig, sighandler_t h)
{
	return set_handler(sig, h, SA_RESTART);
}

EXPORT sighandler_t sysv_signal(int sig, sighandler_t h)
{
	return set_handler(sig, h, SA_RESETHAND | SA_NODEFER);
}

EXPORT sighandler_t __sysv_signal(int sig, sighandler_t h)
{
	return set_handler(sig, h, SA_RESETHAND | SA_NODEFER);
}

/* ---- exits that skip the destructor ---- */

/* Shells (dash, bash's exec failures), forked workers and many runtimes leave by _exit(): the
 * status file goes with them, as it does at exit(). Only unlink and the exit itself: both are
 * async-signal-safe, as _exit() must stay. */
EXPORT _Noreturn void _exit(int status)
{
	if (owner == getpid())
		cn_agent_exit_now();
	syscall(SYS_exit_group, status);
	__builtin_unreachable();
}

EXPORT _Noreturn void _Exit(int status)
{
	_exit(status);
}

/* ---- start ---- */

static void install(int sig, struct wish *w)
{
	struct sigaction sa, prev;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_signal;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	/* All of ours blocked while ours runs: else the kernel, delivering two pending signals at
	 * once, nests the second handler inside the first, and their bytes reach the pipe in the
	 * reverse of the order they were sent. */
	sigemptyset(&sa.sa_mask);
	sigaddset(&sa.sa_mask, sig_suspend);
	sigaddset(&sa.sa_mask, sig_resume);
	if (sig_prepare)
		sigaddset(&sa.sa_mask, sig_prepare);
	real_sigaction(sig, &sa, &prev);
	wish_set(w, &prev);
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

static int wake_pipe(int p[2])
{
	if (pipe2(p, O_CLOEXEC | O_NONBLOCK) < 0)
		return -1;
	p[0] = high_fd(p[0]);
	p[1] = high_fd(p[1]);
	return p[0] >= 0 && p[1] >= 0 ? 0 : -1;
}

/* Our signals are blocked across fork() in the forking thread: one sent to the child before its
 * agent is up waits for it instead of meeting a handler that has nowhere to write. */
static __thread sigset_t mask_before_fork;

static void before_fork(void)
{
	sigset_t ours;

	sigemptyset(&ours);
	sigaddset(&ours, sig_suspend);
	sigaddset(&ours, sig_resume);
	if (sig_prepare)
		sigaddset(&ours, sig_prepare);
	pthread_sigmask(SIG_BLOCK, &ours, &mask_before_fork);
	cn_staging_before_fork();
}

static void after_fork_parent(void)
{
	cn_staging_after_fork_parent();
	pthread_sigmask(SIG_SETMASK, &mask_before_fork, NULL);
}

/* A child forked without exec has none of its parent's threads: it gets an agent of its own, so
 * that it answers for itself (and can be suspended on its own if it uses CUDA), and never reaches
 * its parent's agent or controller. Its controller starts at its first request. */
static void after_fork_child(void)
{
	int w = wake_wr, p[2];

	wake_wr = -1;
	if (w >= 0)
		close(w);
	cn_staging_after_fork();
	cn_hib_after_fork();
	cn_copy_after_fork();
	cn_turn_after_fork();
	cn_gate_after_fork();
	cn_comms_after_fork();
	cn_ipc_after_fork();
	cn_managed_after_fork();
	cn_answer_after_fork();
	if (wake_pipe(p) < 0) {
		cn_agent_fork_child(-1);
	} else if (cn_agent_fork_child(p[0]) < 0) {
		close(p[0]);
		close(p[1]);
	} else {
		owner = getpid();
		wake_wr = p[1];
	}
	pthread_sigmask(SIG_SETMASK, &mask_before_fork, NULL);
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
	int p[2], r;

	real_sigaction(0, NULL, NULL); /* resolve it now, not in a handler */
	cn_staging_init();
	cn_fn_setup();
	if (getauxval(AT_SECURE) || (env && strcmp(env, "off") == 0))
		return;
	/* The agent re-reads the file at resume, possibly after the app has changed directory. */
	if (env && *env && realpath(env, abs))
		setenv("CUDANAP_CONFIG", abs, 1);
	if (cn_config_load_env(&cfg, err, sizeof(err)) < 0)
		startup_error(err);
	if (cn_status_dir_prepare(cfg.status_dir, err, sizeof(err)) < 0) {
		/* Another user may have made it first (/tmp is anyone's): by default that must not
		 * stop the program ([status] if_unusable). */
		if (cfg.status_refuse) {
			snprintf(err + strlen(err), sizeof(err) - strlen(err),
				 "; not starting ([status] if_unusable = refuse)");
			startup_error(err);
		}
		dprintf(STDERR_FILENO,
			"cudanap: %s; running without cudanap ([status] if_unusable = run)\n", err);
		return;
	}
	/* Before main, so before any NCCL code reads it; every process this one starts inherits
	 * it, whatever launches the ranks. A value the user set is kept (cudanap run says so, and
	 * the preflight names it if it keeps the job from being suspended). */
	if (cfg.nccl_suspendable)
		cn_nccl_apply(err, sizeof(err));
	if (cfg.nccl_mode != CN_NCCL_OFF && cfg.nccl_mode != CN_NCCL_SOCKETS && cn_nccl_shadowed())
		dprintf(STDERR_FILENO,
			"cudanap: libnccl is preloaded before libcudanap.so: NCCL's communicators "
			"cannot be suspended with the job; put libcudanap.so first in "
			"LD_PRELOAD\n");
	/* Armed even so: each signal is then answered with the error, and never kills the app. */
	if (!cn_controller_locate())
		dprintf(STDERR_FILENO,
			"cudanap: cudanap-ctl is neither beside libcudanap.so nor in %s; every "
			"suspend will fail until it is installed\n",
			CN_CTL_PATH);
	if (wake_pipe(p) < 0) {
		dprintf(STDERR_FILENO, "cudanap: pipe: %s; suspend/resume disabled\n",
			strerror(errno));
		return;
	}
	r = cn_agent_start(&cfg, p[0]);
	if (r < 0) {
		dprintf(STDERR_FILENO, "cudanap: cannot start: %s; suspend/resume disabled\n",
			strerror(-r));
		close(p[0]);
		close(p[1]);
		return;
	}
	owner = getpid();
	sig_suspend = cfg.suspend_signal;
	sig_resume = cfg.resume_signal;
	sig_prepare = cfg.prepare_signal;
	chain = cfg.chain;
	wake_wr = p[1];
	install(sig_suspend, &wishes[0]);
	if (sig_resume != sig_suspend)
		install(sig_resume, &wishes[1]);
	if (sig_prepare)
		install(sig_prepare, &wishes[2]);
	atomic_store(&armed, true);
	pthread_atfork(before_fork, after_fork_parent, after_fork_child);
}

__attribute__((destructor)) static void cn_fini(void)
{
	if (owner == getpid())
		cn_agent_exit();
}
