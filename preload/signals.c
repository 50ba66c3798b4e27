/* signals: cudanap's signal handler (one byte on the wake pipe), and the app's say over cudanap's
 * signals (docs/FILES.md). The app's threads; the handler in signal context. */
#define _GNU_SOURCE
#include "signals.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <string.h>
#include <ucontext.h>

#include "cn_words.h"
#include "wake.h"

#define EXPORT __attribute__((visibility("default")))

/* Read by the handler: plain words, written before the handler is installed. */
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

static void on_signal(int sig, siginfo_t *info, void *uc)
{
	int saved = errno;
	/* cudanap prepare (and a query) queue the suspend signal with a value of ours: meant for us
	 * alone. */
	int v = info && info->si_code == SI_QUEUE ? info->si_value.sival_int : 0;
	bool queued = v == CN_SIGVAL_PREPARE || v == CN_SIGVAL_QUERY || v == CN_SIGVAL_NAP ||
		      v == CN_SIGVAL_TRIM;
	struct wish *w = slot_of(sig);
	enum cn_wake b = v == CN_SIGVAL_QUERY				? CN_WAKE_QUERY
			 : v == CN_SIGVAL_NAP				? CN_WAKE_NAP
			 : v == CN_SIGVAL_TRIM				? CN_WAKE_TRIM
			 : v == CN_SIGVAL_PREPARE || sig == sig_prepare ? CN_WAKE_PREPARE
			 : sig_suspend == sig_resume			? CN_WAKE_TOGGLE
			 : sig == sig_suspend				? CN_WAKE_SUSPEND
									: CN_WAKE_RESUME;

	/* In a child whose agent could not start, stay silent (wake.c). */
	cn_wake_send(b);
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

void cn_signals_init(void)
{
	real_sigaction(0, NULL, NULL); /* resolve it now, not in a handler */
}

void cn_signals_arm(const struct cn_config *cfg)
{
	sig_suspend = cfg->suspend_signal;
	sig_resume = cfg->resume_signal;
	sig_prepare = cfg->prepare_signal;
	chain = cfg->chain;
	install(sig_suspend, &wishes[0]);
	if (sig_resume != sig_suspend)
		install(sig_resume, &wishes[1]);
	if (sig_prepare)
		install(sig_prepare, &wishes[2]);
	atomic_store(&armed, true);
}

void cn_signals_block(sigset_t *old)
{
	sigset_t ours;

	sigemptyset(&ours);
	if (atomic_load(&armed)) {
		sigaddset(&ours, sig_suspend);
		sigaddset(&ours, sig_resume);
		if (sig_prepare)
			sigaddset(&ours, sig_prepare);
	}
	pthread_sigmask(SIG_BLOCK, &ours, old);
}
