/* words: what the command line and a process under cudanap say to each other (signals' values,
 * notes), written once here for both sides (docs/FILES.md). */
#ifndef CN_WORDS_H
#define CN_WORDS_H

/* ---- values queued (sigqueue) with the suspend signal: meant for cudanap alone, never passed
 * to the app's own handler ---- */

/* cudanap prepare: a suspend comes; fault its host copy in now. */
#define CN_SIGVAL_PREPARE 0x636e7072 /* "cnpr" */
/* cudanap status, suspend --dry-run, pick: what would a suspend do now? No action. */
#define CN_SIGVAL_QUERY 0x636e7171 /* "cnqq" */
/* cudanap nap: nap now, and wake at the next call that needs the GPU. */
#define CN_SIGVAL_NAP 0x636e6e70 /* "cnnp" */
/* Another process of the user needs host memory for its nap: the host copy kept ready for a
 * light nap given back (preload/agent/cache.c). */
#define CN_SIGVAL_TRIM 0x636e7472 /* "cntr" */

/* ---- notes: <status dir>/<pid>.<name> ---- */

/* suspend --to-disk[=DIR]: where this suspend's host copy goes ("" for [hibernate] dir). */
#define CN_NOTE_HIBERNATE "hibernate"
/* resume --gpu-map MAP: this resume's map, over the INI's. */
#define CN_NOTE_GPU_MAP "gpu-map"
/* A nap to make room for another process ([nap] make_room): "PID MIB GPU MIN_IDLE_S", the
 * process it makes room for, the MiB that one needs, the GPU (nvidia-smi's index) and that
 * process's [nap] min_idle_s, which the napped one checks against its own last work; written
 * beside the nap's signal by that process's preload (preload/agent/pager.c). */
#define CN_NOTE_NAP_FOR "nap-for"
/* CUDANAP_DEBUG=calls: the process's driver calls, counted per function (the process writes it). */
#define CN_NOTE_CALLS "calls"

/* The cut of an NCCL job, in this order. At a suspend the rank says its issued operations per
 * communicator (one line each: "KEY RANK NRANKS ISSUED", the key in hex); the command line
 * answers with the count each communicator is to reach ("KEY COUNT" lines); the rank says it is
 * there (its lines again), and at a resume that it is restored (the same lines); the command
 * line lets every rank go on at once (CN_NCCL_GO), or tells them all to give up (its reason, one
 * line). */
#define CN_NOTE_NCCL_CUT    "nccl-cut"
#define CN_NOTE_NCCL_GO	    "nccl-go"
#define CN_NOTE_NCCL_READY  "nccl-ready"
#define CN_NOTE_NCCL_COMMIT "nccl-commit"
#define CN_NOTE_NCCL_ABORT  "nccl-abort"
/* Left by the command line before its signal when it leads the cut of that suspend or resume (its
 * pid); without it the ranks lead their cut themselves (preload/agent/lead.c), and give up
 * telling each other (nccl-abort, "rank PID gave up: ..."). */
#define CN_NOTE_NCCL_LED "nccl-led"
#define CN_NCCL_GO	 "go\n"

#endif
