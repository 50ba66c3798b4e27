/* entry: the preload's entry points: the constructor, the exits that skip the destructor, and
 * forks (docs/FILES.md). The app's threads. */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "agent/agent.h"
#include "cuda/answers.h"
#include "cn_config.h"
#include "cn_dirs.h"
#include "cn_ncclenv.h"
#include "nccl/comms.h"
#include "hostcopy/copy.h"
#include "cuda/fns.h"
#include "cuda/gate.h"
#include "hostcopy/hibernate.h"
#include "nccl/interpose.h"
#include "cuda/ipc.h"
#include "agent/launch.h"
#include "agent/span.h"
#include "cuda/managed.h"
#include "cuda/light.h"
#include "cuda/owned.h"
#include "cuda/peers.h"
#include "signals.h"
#include "hostcopy/staging.h"
#include "hostcopy/turns.h"
#include "wake.h"

#define EXPORT __attribute__((visibility("default")))

static pid_t owner = -1; /* the process whose agent runs: its exit removes its status file */

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

/* ---- forks ---- */

/* Our signals are blocked across fork() in the forking thread: one sent to the child before its
 * agent is up waits for it instead of meeting a handler that has nowhere to write. */
static __thread sigset_t mask_before_fork;

static void before_fork(void)
{
	cn_signals_block(&mask_before_fork);
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
	cn_wake_close(); /* the parent's */
	cn_staging_after_fork();
	cn_hibernate_after_fork();
	cn_copy_after_fork();
	cn_turns_after_fork();
	cn_gate_after_fork();
	cn_comms_after_fork();
	cn_ipc_after_fork();
	cn_managed_after_fork();
	cn_answers_after_fork();
	cn_peers_after_fork();
	cn_owned_after_fork();
	cn_light_after_fork();
	cn_span_after_fork();
	if (cn_wake_open() < 0) {
		cn_agent_fork_child(false);
	} else if (cn_agent_fork_child(true) < 0) {
		cn_wake_close();
	} else {
		owner = getpid();
	}
	pthread_sigmask(SIG_SETMASK, &mask_before_fork, NULL);
}

/* ---- start ---- */

static void startup_error(const char *msg)
{
	dprintf(STDERR_FILENO, "cudanap: %s\n", msg);
	_exit(78); /* EX_CONFIG */
}

/* The status directory made ready; false when it is not and the program runs without cudanap
 * (said), as [status] if_unusable = run asks; with refuse, the program does not start. */
static bool status_dir_ready(const struct cn_config *cfg, char *err, size_t len)
{
	if (cn_dirs_status_prepare(cfg->status_dir, err, len) >= 0)
		return true;
	/* Another user may have made it first (/tmp is anyone's): by default that must not stop
	 * the program ([status] if_unusable). */
	if (cfg->status_refuse) {
		snprintf(err + strlen(err), len - strlen(err),
			 "; not starting ([status] if_unusable = refuse)");
		startup_error(err);
	}
	dprintf(STDERR_FILENO,
		"cudanap: %s; running without cudanap ([status] if_unusable = run)\n", err);
	return false;
}

/* NCCL's environment for a suspendable job, and a warning when the preload order keeps its
 * communicators from being interposed. */
static void prepare_nccl(const struct cn_config *cfg, char *err, size_t len)
{
	/* Before main, so before any NCCL code reads it; every process this one starts inherits
	 * it, whatever launches the ranks. A value the user set is kept (cudanap run says so, and
	 * the preflight names it if it keeps the job from being suspended). */
	if (cfg->nccl_suspendable)
		cn_ncclenv_apply(err, len);
	if (cfg->nccl_mode != CN_NCCL_OFF && cfg->nccl_mode != CN_NCCL_SOCKETS &&
	    cn_interpose_shadowed())
		dprintf(STDERR_FILENO,
			"cudanap: libnccl is preloaded before libcudanap.so: NCCL's communicators "
			"cannot be suspended with the job; put libcudanap.so first in "
			"LD_PRELOAD\n");
}

/* The agent started, and only then the signal handler armed; on a failure said, neither. */
static void start_agent(const struct cn_config *cfg, const char *ctl_path)
{
	int r = cn_wake_open();

	if (r < 0) {
		dprintf(STDERR_FILENO, "cudanap: pipe: %s; suspend/resume disabled\n",
			strerror(-r));
		return;
	}
	r = cn_agent_start(cfg, ctl_path);
	if (r < 0) {
		dprintf(STDERR_FILENO, "cudanap: cannot start: %s; suspend/resume disabled\n",
			strerror(-r));
		cn_wake_close();
		return;
	}
	owner = getpid();
	cn_signals_arm(cfg);
	pthread_atfork(before_fork, after_fork_parent, after_fork_child);
}

__attribute__((constructor)) static void cn_init(void)
{
	static struct cn_config cfg;
	const char *env = secure_getenv("CUDANAP_CONFIG");
	char err[CN_ERR_LEN], abs[PATH_MAX], ctl[PATH_MAX];

	cn_signals_init();
	cn_staging_init();
	cn_lookup_setup();
	if (getauxval(AT_SECURE) || (env && strcmp(env, "off") == 0))
		return;
	/* The agent re-reads the file at resume, possibly after the app has changed directory. */
	if (env && *env && realpath(env, abs))
		setenv("CUDANAP_CONFIG", abs, 1);
	if (cn_config_load_env(&cfg, err, sizeof(err)) < 0)
		startup_error(err);
	if (!status_dir_ready(&cfg, err, sizeof(err)))
		return;
	prepare_nccl(&cfg, err, sizeof(err));
	/* Armed even so: each signal is then answered with the error, and never kills the app. */
	if (!cn_launch_ctl_locate(ctl, sizeof(ctl)))
		dprintf(STDERR_FILENO,
			"cudanap: cudanap-ctl is neither beside libcudanap.so nor in %s; every "
			"suspend will fail until it is installed\n",
			CN_CTL_PATH);
	start_agent(&cfg, ctl);
}

__attribute__((destructor)) static void cn_fini(void)
{
	if (owner == getpid())
		cn_agent_exit();
}
