/* state: what the agent keeps between actions, one struct cn_agent handed down to every action and
 * service, each field saying which file writes it. Agent thread. */
#ifndef CN_STATE_H
#define CN_STATE_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cn_config.h"
#include "cn_gpumap.h"
#include "cn_status.h"
#include "ctl_proto.h"

/* Where the process's memory is and was, as the controller's answers said: state.c. */
struct cn_where {
	/* What it held per GPU at its last checkpoint, for the check before restore. */
	uint32_t n_use;
	struct cn_gpu_use use[CN_MAX_GPUS];
	/* Where the GPUs it started on are now (those not at home). */
	uint32_t n_moves;
	struct cn_gpu_move moves[CN_MAX_GPUS];
	/* The machine's GPUs in nvidia-smi order, as the controller last listed them. */
	uint32_t n_gpus;
	struct cn_uuid gpus[CN_MAX_GPUS];
	char model[96]; /* of its GPU at the last checkpoint, for the rates (rates.c) */
};

/* The host copy it holds between actions. */
struct cn_held {
	bool thp;      /* transparent huge pages not [never] on this host: agent.c */
	bool thp_said; /* the fallback was logged once: suspend.c */
	/* Hibernate: asked for at this suspend (the file is open), the disk space it found, and
	 * where the copy is once it went to disk (NULL while it is in RAM): suspend.c, and resume.c
	 * once the copy is back. */
	bool hib;
	uint64_t hib_free;
	void *hib_addr;
	size_t hib_len;
	char hib_note[320]; /* why this suspend's copy stayed in RAM after all, "" if it did not */
	/* cudanap prepare: a host copy faulted in ahead is held until this CLOCK_MONOTONIC time
	 * (ms), or until the suspend that uses it; 0 when none is: prepare.c, state.c. */
	double prepared_until;
	size_t prepared_bytes;
	/* The host copy the last checkpoint filled (0: the driver's own, not seen): what the
	 * restore copies back, which tells the turns when the copy is done: suspend.c. */
	size_t copy_bytes;
	/* A light nap's wake after a restore, whose host copy could not all go back then:
	 * resume.c. */
	bool light_restored;
	/* The copy kept ready for the next light nap, under [memory] host_cache: cache.c. */
	struct {
		double last_ms;
		double not_before_ms; /* no copy made ahead before this: one was given back */
		double backoff_ms;
		bool making; /* a copy made ahead, not said done yet */
		bool trim;   /* asked for while napping: the wake does not keep its copy */
	} ready;
};

struct cn_agent {
	struct cn_config cfg;  /* the INI as last read: agent.c at start, reload.c at each action */
	struct cn_where where; /* state.c */
	struct cn_held held;
	/* What the status file says, and when the action under way began (CLOCK_MONOTONIC ms):
	 * report.c alone writes them; the others read the status. */
	struct cn_status status;
	double began_ms;
	bool unwritten_said; /* a status file that could not be written was logged: report.c */
	/* The line to the controller (-1 while none runs), and the controller's program as
	 * launch.c found it at start: channel.c. */
	int sock;
	char ctl_path[PATH_MAX];
};

/* The machine's GPUs, when the controller's answer lists them. */
void cn_state_gpus(struct cn_where *w, const struct cn_resp *r);
/* What the process holds on which GPU, and the machine's GPUs, from the controller's answer to a
 * checkpoint or a prepare. */
void cn_state_remember(struct cn_where *w, const struct cn_resp *r);
/* After a restore: the GPUs the process started on are where the controller put them, and the
 * process's own GPUs moved with them. */
void cn_state_moved(struct cn_where *w, const struct cn_resp *r);
/* Where the restore r puts the GPU the process is on at was (before cn_state_moved takes r in). */
void cn_state_follow(const struct cn_where *w, const struct cn_resp *r, const struct cn_uuid *was,
		     struct cn_uuid *now);
/* Where a restore under map puts the memory on each GPU of use (to[u] for use[u]), by the
 * machine's GPUs as last listed (cn_gpumap_resolve): 0, or -1 when those are not known or the map
 * does not fit them (the controller then says why). */
int cn_state_targets(const struct cn_where *w, const struct cn_gpumap *map, struct cn_uuid *to);
/* The GPU memory of the last checkpoint, in MiB; -1 when not known. */
double cn_state_footprint_mib(const struct cn_where *w);
/* A prepared host copy given back (hostcopy/staging.c's): used by a checkpoint, or never to be. */
void cn_state_unprepare(struct cn_held *h);

#endif
