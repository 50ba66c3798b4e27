/* status: the per-process status file <dir>/<pid>.json, written by the preload's helper thread
 * and read by the CLI. One flat JSON object; written atomically (temp file + rename), mode 0600.
 * Like the rest of this library it never prints. */
#ifndef CN_STATUS_H
#define CN_STATUS_H

#include <stdbool.h>
#include <stddef.h>

#include "cn_config.h"
#include "cn_counts.h"
#include "cn_outcome.h"
#include "cn_safe.h"

/* Space for the worst case: every character of command and message escaped as \u00XX. */
#define CN_STATUS_MAX 16384
/* The largest number a status file may hold, in magnitude: a 64-bit count or clock fits. */
#define CN_STATUS_NUM_MAX 1.8e19
#define CN_STATUS_GPUS	  720 /* 16 GPUs of "63=GPU-...," */
/* Where the status's peer field says what cudanap owns of the process's memory (its last part,
 * after "; " when peer access comes first): not peer access, and said apart by the command line. */
#define CN_STATUS_OWNED "owned: "

/* The steps of an action, in the order they run. prepare: the host copy faulted in ahead (the
 * prepare action's only step); hibernate: the host copy written to disk and dropped from memory
 * after the checkpoint; readback: read back before the restore; wait: for other processes'
 * restores to get through the driver's setup (preload/hostcopy/turns.c), only when there were any.
 */
enum cn_step {
	CN_STEP_PREPARE,
	CN_STEP_LOCK,
	CN_STEP_CHECKPOINT,
	CN_STEP_HIBERNATE,
	CN_STEP_READBACK,
	CN_STEP_WAIT,
	CN_STEP_RESTORE,
	CN_STEP_UNLOCK,
	CN_STEPS
};

struct cn_status {
	int pid;
	unsigned long long starttime; /* /proc/PID/stat field 22: tells a reused pid apart */
	char command[256];
	enum cn_state state;
	bool busy;	   /* an action is under way; state is the one before it */
	unsigned long seq; /* actions completed so far */
	enum cn_action action;
	int result;	      /* enum cn_result: CUDA's, or cudanap's own */
	char result_name[48]; /* a CUDA result's name, as the driver gave it (cudanap's own are
				 named by cn_outcome_result_name) */
	/* A refusal naming the peer access between 8 GPUs runs to about 340. */
	char message[480];
	double step_ms[CN_STEPS]; /* < 0: the step did not run in the last action */
	double total_ms;	  /* the whole action, from the agent's wake to its outcome */
	/* The host copy, when cudanap staged it (see preload/hostcopy/staging.c); < 0 when it did
	 * not. */
	double staged_mib, prefault_ms, unmap_ms;
	/* libcuda's copies of 2 MiB or more in the last driver call that moved memory, when cudanap
	 * ran them in parallel (see preload/hostcopy/copy.c); < 0 when it did not. */
	double copy_mib, copy_ms;
	/* GPU memory the process held when last checkpointed (NVML), over all its GPUs; < 0 when
	 * not known. */
	double footprint_mib;
	/* Of the restore: the room check and the hold on the target GPUs before the driver's call.
	 */
	double reserve_ms;
	/* What its host copy holds now (asleep, napping lightly, or prepared), kept across actions
	 * and set at the end of each: resident host memory, and space on disk when hibernated; < 0
	 * when there is none. */
	double host_mib, disk_mib;
	unsigned long long call_ns; /* CLOCK_MONOTONIC when the action's first driver call began */
	char timestamp[32];	    /* UTC, ISO 8601, milliseconds */
	int suspend_signal, resume_signal;
	bool prepared; /* a prepared host copy waits for the next suspend (cudanap prepare) */
	/* Where its memory is, "INDEX=UUID,..." in nvidia-smi's numbering ("" until the first
	 * question, suspend or prepare): the GPUs it is on (asleep: slept from), those it started
	 * on, and, asleep, those a resume puts it on by the INI as read at the suspend. */
	char gpus[CN_STATUS_GPUS], home_gpus[CN_STATUS_GPUS], restore_gpus[CN_STATUS_GPUS];
	/* How its NCCL communicators are handled at a suspend ("" when it has none). */
	char nccl[96];
	/* The keys of its communicators that span other processes, "KEY,KEY" (hex; those its job's
	 * ranks share): a rank of the same job is not another job beside it. */
	char nccl_keys[8 * 17];
	/* Restores done (by resumes and wakes), kept across actions: no other job's process is
	 * restored beside an NCCL rank that has any ([restore] beside_restored). */
	unsigned long restores;
	/* What a suspend would do now, as the last query found it (cudanap status, suspend
	 * --dry-run), apart from the actions' fields: query_seq counts the queries answered. */
	unsigned long query_seq;
	char query_time[32]; /* UTC, ISO 8601 */
	enum cn_ask suspendable;
	char why_not[480];    /* why not, in a few words */
	char gpu_now[160];    /* "0:8712,1:0": MiB on each GPU by nvidia-smi's index */
	char gpu_model[96];   /* of the first of them */
	double gpu_now_mib;   /* on all of them; < 0 when not known */
	double host_need_mib; /* its host copy (and the margin); < 0 when not known */
	double host_room_mib; /* what the host, its cgroup or the hibernate dir has */
	char host_bound[160]; /* which of those bounds it */
	double est_suspend_s; /* the suspend's and the resume's time, estimated */
	double est_resume_s;
	char est_source[160]; /* where the estimate comes from */
	char inside[200];     /* a thread inside a driver call, and for how long at least */
	/* Access between its GPUs: "GPU 0->1 by cuCtxEnablePeerAccess in libc10_cuda.so", what a
	 * suspend turned off and stays off, memory mapped to another GPU; then, last, what cudanap
	 * owns of its memory, after CN_STATUS_OWNED; "" when none (also kept by every action). */
	char peer[400];
	/* A restored NCCL rank running: the processes of another job on its GPUs, "GPU 0 runs pid
	 * 4242" (the driver no longer preempts a restored context, preload/agent/beside.c); "" when
	 * none, or not such a rank. */
	char beside[200];
	/* Naps ([nap] idle_s, cudanap nap), also kept across actions. */
	enum cn_nap nap;
	char nap_why[480]; /* why it is not napped, or what its wake waits for */
	/* How the last nap went: light (what cudanap owns on the host, the context kept: its
	 * light_mib moved out in light_ms), full (the driver's checkpoint), none before any. */
	enum cn_depth nap_depth;
	/* Why it was full (auto's choice, or the INI's), CN_DEPTH_WHY_NONE when light. */
	enum cn_depth_why depth_why;
	double light_mib, light_ms;
	/* What a nap of it would give back now when it naps lightly (what cudanap owns), for the
	 * processes that make room; < 0 when its naps are full. */
	double light_able_mib;
	/* The pinned host copy it keeps for its next light nap ([nap] keep_host_copy), 0: none. */
	double host_kept_mib;
	/* The free space of [hibernate] dir's file system, which a nap of it may take where the host
	 * has no room for its copy ([nap] to = auto), as its idleness began, for the processes that
	 * make room; 0: its naps do not go to disk so (or the dir cannot be used). */
	double nap_disk_mib;
	char idle_since[32]; /* UTC: its CUDA idle since then; "" while it works */
	unsigned long naps, wakes;
	double last_wake_ms; /* the delay the last waking call saw; < 0 before the first */
	/* The naps by cause: idle ([nap] idle_s), asked (cudanap nap), and to make room for another
	 * process; and for which process and how much it needed, the last time (0 and < 0: never).
	 */
	unsigned long naps_idle, naps_asked, naps_room;
	/* The naps [nap] depth = auto made full: its light copy over [memory] host_cache, a GPU in
	 * an exclusive compute mode. */
	unsigned long naps_full_host, naps_full_exclusive, naps_full_disk;
	int nap_for_pid;
	double nap_for_mib;
	char nap_for_user[33]; /* that process's user, when the node pager napped it for another's
				*/
	/* [nap] make_room: the times other processes were napped to make room for this one; and the
	 * node pager's last word on its needs, one line ("" before any): the room made and whom it
	 * napped, or why it made none. */
	unsigned long rooms_made;
	char room_last[400];
	/* GPU memory given back (also kept across actions; cudanap metrics): since when (UTC,
	 * seconds since the epoch; < 0 while it holds its GPUs), how much on each GPU ("0:8192":
	 * MiB by nvidia-smi's index, as at the checkpoint), and the bytes given back times the
	 * seconds they stayed given back, over the releases that ended (< 0 before the first). */
	double released_since;
	char released_gpus[160];
	double released_byte_s;
	/* The actions it ended, by result, and how long they took (cudanap metrics), kept across
	 * actions: "actions", "suspend_buckets" and "suspend_sum_s", ... in the file. */
	struct cn_counts counts;
};

/* A step's word ("checkpoint"; the file's key adds "_ms"), and back (CN_STEPS for none). */
CN_NAMES_DECLARE(cn_status_step, enum cn_step);

void cn_status_init(struct cn_status *s, int pid);
/* Start a new action: busy, no result yet, every step and measurement cleared. */
void cn_status_new_action(struct cn_status *s, int action);
int cn_status_format(const struct cn_status *s, char *buf, size_t len);
/* Whether a light nap holds the process's host copy (its state is running meanwhile). */
bool cn_status_light_held(const struct cn_status *s);
/* The state as every output says it: the driver's state, but napping for a process checkpointed by
 * a nap or napping lightly; and its word (cn_outcome.h). */
enum cn_state cn_status_state_of(const struct cn_status *s);
const char *cn_status_state(const struct cn_status *s);
/* The result's name, as the file says it: "ok", cudanap's own, the driver's name of a CUDA result
 * (as the process was told it, or read), "" while the action runs. */
const char *cn_status_result(const struct cn_status *s);
/* Seconds from a time the status file writes (UTC, ISO 8601 with milliseconds:
 * "2026-11-26T05:12:33.123Z") to now; -1 when it is not one. */
double cn_status_since_s(const char *utc);
/* "lock 0.2 ms, checkpoint 1.52 s": the steps that ran, and ", other 1.61 s" when the action's
 * total_ms (from the agent's wake to its outcome) exceeds their sum by 50 ms or more; returns the
 * length written. */
size_t cn_status_steps(const struct cn_status *s, char *buf, size_t len);
int cn_status_parse(const char *buf, struct cn_status *s);
/* src copied into dst (len bytes at most, cut short if need be) as text fit for a terminal and a
 * JSON or Prometheus reader: tabs and newlines made spaces, control characters (C0, DEL, C1) and
 * every byte that is not part of valid UTF-8 (strict: no overlong form, surrogate or code point
 * above U+10FFFF) made '?'. Every string the parser reads goes through it. */
void cn_status_text(char *dst, size_t len, const char *src);

/* Atomic replace of <dir>/<pid>.json. Needs no allocation, so the helper thread can call it at
 * any time. */
int cn_status_write(const char *dir, const struct cn_status *s);
/* <dir>/<pid>.json read, if it may be believed: the directory and the file pid's user's (or
 * root's), nobody else's to write in (cn_safe.h), the file naming pid and only signals cudanap
 * sends. 0, or -errno (-ESTALE: it names another pid) with why in one line. */
int cn_status_read(const char *dir, int pid, struct cn_status *s);
int cn_status_read_why(const char *dir, int pid, struct cn_status *s, char *why, size_t len);
/* <pid>.json in the directory dirfd (already judged by its caller), the file owned as o says:
 * as cn_status_read_why, with what fstat said of the file in *st. */
int cn_status_read_in(int dirfd, int pid, struct cn_owner o, struct cn_status *s, struct stat *st,
		      char *why, size_t len);
/* <dir>/<pid>.json removed: the process's own, at its exit. */
int cn_status_remove(const char *dir, int pid);
/* <pid>.json in the directory dirfd removed if it is still the file *was describes: another
 * process's file, gone stale, removed by the command line (cn_safe_unlink_same). */
int cn_status_remove_in(int dirfd, int pid, const struct stat *was);
void cn_status_path(const char *dir, int pid, char *out, size_t len);

#endif
