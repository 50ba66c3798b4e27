/* config: the job's INI file, parsed and validated into struct cn_config; shared by the preload
 * and the CLI, it never prints, exits or touches CUDA (docs/FILES.md). */
#ifndef CN_CONFIG_H
#define CN_CONFIG_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "cn_ini.h"
#include "cn_names.h"
#include "cn_uuid.h"

#define CN_MAX_GPUS 64
#define CN_ERR_LEN  512
#define CN_HOOK_LEN 2048
/* The longest INI file: the one read at a start, and root's reading of the one another user's
 * process names (cn_config_status_dir), stop at the same size, so that what root reads is all the
 * process read. */
#define CN_CONFIG_MAX (1u << 20)

/* [log] level. */
enum cn_log_level { CN_LOG_ERROR = 0, CN_LOG_INFO = 1, CN_LOG_DEBUG = 2 };

/* [nccl] mode: how a process's NCCL communicators are handled at a suspend. */
enum cn_nccl_mode {
	CN_NCCL_AUTO,	 /* NCCL's suspend API where the loaded NCCL has it, else refused */
	CN_NCCL_API,	 /* NCCL's suspend API, or refused */
	CN_NCCL_SOCKETS, /* ranks over sockets ([nccl] suspendable), the API not used */
	CN_NCCL_OFF,	 /* not looked at: no API, no refusal */
};

/* [nap] depth: full, the driver's checkpoint (the GPU left at 0 MiB); light, what cudanap owns
 * copied to host memory and released, the context kept (preload/cuda/light.c); auto, light first,
 * then full after full_after_s of the nap (0: never) or when the wake must go to other GPUs. A
 * status says by it how its last nap went: light or full, none before any. */
enum cn_depth { CN_DEPTH_NONE = -1, CN_DEPTH_FULL, CN_DEPTH_LIGHT, CN_DEPTH_AUTO };

/* [nap] to: where a nap's copy goes: host memory, a file in [hibernate] dir, or host memory
 * where the host has room for it and the file where it has not (a full nap then). */
enum cn_nap_to { CN_NAP_TO_RAM, CN_NAP_TO_DISK, CN_NAP_TO_AUTO };

/* [memory] own: large device memory served by cudanap in pieces the driver restores
 * (preload/cuda/owned.c); auto: in a process that sees more than one GPU. */
enum cn_own { CN_OWN_AUTO, CN_OWN_ALWAYS, CN_OWN_NEVER };

/* [nap] make_room: not at all, the node pager where its socket is else the user's own (on), the
 * user's own, the node pager (the user's own when it does not answer), the node pager or none. */
enum cn_make_room {
	CN_MAKE_ROOM_OFF,
	CN_MAKE_ROOM_ON,
	CN_MAKE_ROOM_USER,
	CN_MAKE_ROOM_NODE,
	CN_MAKE_ROOM_AUTO
};

/* The words of each, as the INI writes them ("debug", "suspend-api", "light", "never"). */
CN_NAMES_DECLARE(cn_config_log_level, enum cn_log_level);
CN_NAMES_DECLARE(cn_config_nccl_mode, enum cn_nccl_mode);
CN_NAMES_DECLARE(cn_config_depth, enum cn_depth);
CN_NAMES_DECLARE(cn_config_own, enum cn_own);
CN_NAMES_DECLARE(cn_config_nap_to, enum cn_nap_to);
CN_NAMES_DECLARE(cn_config_make_room, enum cn_make_room);

/* One side of a gpu_map pair: a device index as nvidia-smi numbers GPUs, or a UUID. */
struct cn_gpu_ref {
	int index; /* -1 when uuid holds the GPU */
	struct cn_uuid uuid;
};

struct cn_gpu_pair {
	struct cn_gpu_ref from, to;
};

/* [restore] gpu_map, or a one-shot `cudanap resume --gpu-map`: where the GPUs a job started on go,
 * as its text says it (cn_gpumap.h), unresolved until it meets a machine's GPUs. */
struct cn_gpumap {
	unsigned n;
	struct cn_gpu_pair pairs[CN_MAX_GPUS];
};

struct cn_config {
	char path[PATH_MAX]; /* "" when built from defaults alone */
	int suspend_signal;
	int resume_signal;
	int prepare_signal;	  /* 0: none (cudanap prepare queues the suspend signal instead) */
	bool chain;		  /* call the app's own handler for our signals after ours */
	unsigned lock_timeout_ms; /* 0 waits forever */
	struct cn_gpumap gpu_map;
	unsigned margin_mib; /* free GPU memory a restore needs beyond the job's footprint */
	bool reserve;	     /* hold that memory from the check until the restore */
	bool take_turns;     /* restores of one status directory go through setup one at a time */
	/* a restored NCCL rank and another job's process may share a GPU (refused by default: the
	 * driver does not preempt a restored context, preload/agent/beside.c) */
	bool beside_restored;
	unsigned
		room_wait_s; /* a restore without room waits this long for it; 0: refused at once */
	char status_dir[PATH_MAX];
	bool status_refuse; /* a status dir that cannot be used stops the program (else: it runs
			       without cudanap) */
	char hibernate_dir[PATH_MAX]; /* "" keeps the host copy in RAM */
	int log_level;
	char log_target[PATH_MAX]; /* "" means stderr */
	char on_suspended[CN_HOOK_LEN];
	char on_resumed[CN_HOOK_LEN];
	char on_failure[CN_HOOK_LEN];
	unsigned hook_timeout_ms;
	bool hugepages;		   /* stage the driver's host copy in huge pages */
	unsigned prefault_threads; /* threads that prefault it; 0: none */
	bool keep_host_buffer;	   /* keep the host copy mapped for the next suspend */
	unsigned copy_threads;	   /* threads for libcuda's large copies; 0: leave them alone */
	unsigned prepare_s;	   /* how long a prepared host copy is held; 0: prepare is off */
	bool allow_jax;		   /* no longer used: accepted for older files */
	bool allow_nccl;	   /* suspend NCCL processes whatever their transports */
	bool nccl_suspendable;	   /* set NCCL's environment to transports a checkpoint survives */
	enum cn_nccl_mode nccl_mode; /* sockets whenever nccl_suspendable */
	unsigned nccl_cut_port; /* the ranks on several nodes meet at their cut here; 0: they do not
				 */
	bool host_check;	/* refuse a suspend whose host copy will not fit */
	unsigned host_margin_mib; /* host memory to leave beyond the copy */
	unsigned watchdog_ms;	  /* say so when a driver call runs longer than this */
	unsigned nap_idle_s;	  /* nap after this long without driver work; 0: never */
	enum cn_nap_to nap_to;	  /* where a nap's host copy goes: RAM, [hibernate] dir, either */
	bool nap_wake_any;	  /* a nap wakes on any GPU of its model with room, not only home */
	/* [nap] make_room as the file says it: when this process needs GPU memory that is not free
	 * (a wake, an allocation refused as out of memory), nap idle processes on that GPU. off;
	 * user: this user's own, idle min_idle_s at least (preload/agent/pager.c); node: every
	 * user's, by the node pager (pager_socket) under the operator's policy, this user's own
	 * when it does not answer (said once); on (true): the node pager where its socket is, else
	 * this user's own; auto: the node pager where its socket is, else off. */
	enum cn_make_room nap_room;
	/* What it comes to (cn_config_room, at each load): room made at all, and by asking the node
	 * pager first. */
	bool nap_make_room, nap_room_node;
	char pager_socket[PATH_MAX];
	unsigned nap_min_idle_s;
	enum cn_depth nap_depth; /* [nap] depth */
	unsigned nap_full_after_s;
	/* [nap] keep_host_copy: a light nap's pinned host copy kept while the process runs, for its
	 * next light nap (no pages to make and pin: its copy out runs at the bus's speed); the host
	 * holds it all the time. */
	bool nap_keep_host;
	/* [nap] copy_ahead: the pinned host copy made while the process is idle, before its light
	 * nap, so that the nap copies at the bus's speed (preload/agent/cache.c). */
	bool nap_copy_ahead;
	/* [memory] host_cache: the share (percent) of the host's memory, or of the cgroup limit
	 * that bounds the process, that the kept and made-ahead host copies of this user's
	 * processes in one status directory may pin together; 0: none kept or made ahead. A light
	 * nap whose copy is over it naps fully under depth = auto. */
	unsigned host_cache_pct;
	/* [peer] mode: a process with peer access between its GPUs is suspended with that access
	 * turned off (and off after the resume, where the driver cannot give it back), instead of
	 * refused. */
	bool peer_off;
	enum cn_own own; /* [memory] own */
};

/* Defaults for every key; the status dir from the environment (cn_dirs_status_default). */
void cn_config_defaults(struct cn_config *c);

/* Defaults, then the file at path on top. On error, err reads "FILE:LINE: section.key: reason"
 * for the file's first error (with how many more there are), and c is left in an unspecified
 * state. */
int cn_config_load(struct cn_config *c, const char *path, char *err, size_t errlen);

/* cn_config_load, each error of the file kept (cn_ini.h): 0 when there is none, else as
 * cn_config_load. */
int cn_config_check(struct cn_config *c, const char *path, struct cn_ini_errors *errs);

/* Only [status] dir of the file at path (or the default from the two variables and the uid),
 * ignoring every other error: a job whose INI has since been broken must still be found by its
 * status files. The file is read as uid and gid would (cn_safe_read_as): the process's user's. */
void cn_config_status_dir(const char *path, const char *status_env, const char *xdg, uid_t uid,
			  gid_t gid, char *dir, size_t len);

/* The file named by $CUDANAP_CONFIG, or defaults alone when it is unset or empty. */
int cn_config_load_env(struct cn_config *c, char *err, size_t errlen);

/* nap_make_room and nap_room_node from nap_room and whether pager_socket is a socket now. */
void cn_config_room(struct cn_config *c);

/* A decimal number of at most max, digits only: 0, -EINVAL or -ERANGE. */
int cn_config_uint(const char *s, unsigned long max, unsigned long *out);

/* Whether a light nap's host copy is kept after its wake: [nap] keep_host_copy, where naps may be
 * light and the cache has a share. */
bool cn_config_keeps_host(const struct cn_config *c);

/* Whether this process's naps may be light: in RAM, and [nap] depth light, or auto with naps on
 * ([nap] idle_s or make_room). Only then does cudanap own its allocations of 2 MiB and more
 * (cuda/owned.c), which a light nap moves. */
bool cn_config_light_naps(const struct cn_config *c);

#endif
