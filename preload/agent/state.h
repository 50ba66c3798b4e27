/* agent_state: what the agent knows of its process between actions. One per process, read and
 * written by the agent thread only (agent.c starts it; channel.c, report.c, steps.c, suspend.c
 * and resume.c are its rooms). */
#ifndef CN_STATE_H
#define CN_STATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cn_config.h"
#include "cn_status.h"
#include "ctl_proto.h"

struct cn_agent {
	struct cn_config cfg; /* reloaded at each action (steps.c) */
	struct cn_status st;  /* what the status file says (report.c writes it) */
	/* What the process held per GPU at its last checkpoint, for the check before restore. */
	uint32_t n_use;
	struct cn_gpu_use use[CN_MAX_GPUS];
	bool thp;      /* transparent huge pages not [never] on this host */
	bool thp_said; /* the fallback was logged once */
	/* Hibernate: asked for at this suspend (the file is open), the disk space it found, and
	 * where the copy is once it went to disk (NULL while it is in RAM). */
	bool hib;
	uint64_t hib_free;
	void *hib_addr;
	size_t hib_len;
	char hib_note[320]; /* why this suspend's copy stayed in RAM after all, "" if it did not */
	/* This suspend's lock waits at most this long: what the gate's wait for the app's calls
	 * left of [lock] timeout_ms (0: for ever). */
	unsigned lock_ms;
	/* cudanap prepare: a host copy faulted in ahead is held until this CLOCK_MONOTONIC time
	 * (ms), or until the suspend that uses it; 0 when none is. */
	double prepared_until;
	size_t prepared_bytes;
	/* The host copy the last checkpoint filled (0: the driver's own, not seen): what the
	 * restore copies back, which tells the turns when the copy is done. */
	size_t copy_bytes;
	/* Placement: where the GPUs the process started on are now (those not at home); the map of
	 * the resume under way, the INI's or a one-shot (cudanap resume --gpu-map); the machine's
	 * GPUs in nvidia-smi order, as the controller last listed them. */
	uint32_t n_moves;
	struct cn_gpu_move moves[CN_MAX_GPUS];
	uint32_t n_pairs;
	struct cn_gpu_pair pairs[CN_MAX_GPUS];
	uint32_t n_gpus;
	unsigned char gpus[CN_MAX_GPUS][16];
	char model[96]; /* of its GPU at the last checkpoint, for the rates (rates.c) */
};

extern struct cn_agent cn_ag;

/* What the process holds on which GPU, and the machine's GPUs, from the controller's answer to a
 * checkpoint or a prepare. */
void cn_state_remember(const struct cn_resp *r);
/* After a restore: the GPUs the process started on are where the controller put them, and the
 * process's own GPUs moved with them. */
void cn_state_moved(const struct cn_resp *r);
/* The GPU memory of the last checkpoint, in MiB; -1 when not known. */
double cn_state_footprint_mib(void);

#endif
