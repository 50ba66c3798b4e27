/* room: free GPU memory made on one GPU for this process by napping the user's idle processes
 * ([nap] make_room; docs/NAPS.md). Agent thread, but for the turn given back after an app's call.
 */
#define _GNU_SOURCE
#include "agent/room.h"

#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

#include "agent/channel.h"
#include "clock.h"
#include "cn_hostmem.h"
#include "cn_notes.h"
#include "cn_proc.h"
#include "cn_safe.h"
#include "cn_words.h"
#include "cuda_abi.h"
#include "cuda/hostbuf.h"
#include "agent/log.h"
#include "agent/nodepager.h"
#include "agent/others.h"
#include "agent/report.h"
#include "agent/state.h"

#define NAP_WAIT_MS   60000 /* one candidate's nap, beyond [lock] timeout_ms */
#define DISK_BYTES_MS 500000.0 /* a nap to disk's speed, bytes a ms, at the least (0.5 GB/s) */

/* The turn: this process's fd on room.lock while it holds it; -1 when not. File-scope: the app's
 * thread whose call the room was made for gives it back (pager.c's cn_pager_done). */
static atomic_int turn_fd = -1;

/* ---- the turn ---- */

/* The lock in the status dir, checked again now and used by its fd (cn_safe.h): 0, -EAGAIN when
 * another process holds it, or -1 with why said. */
static int take_turn(struct cn_agent *ag, char *why, size_t len)
{
	struct cn_owner o;
	int dir, fd;

	if (atomic_load(&turn_fd) >= 0)
		return 0;
	dir = cn_safe_dir_of(ag->cfg.status_dir, (int)getpid(), &o, why, len);
	if (dir < 0)
		return -1;
	fd = cn_safe_lock_file(dir, "room.lock");
	close(dir);
	if (fd < 0) {
		snprintf(why, len, "room.lock in the status dir cannot be opened");
		return -1;
	}
	if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		int e = errno;

		close(fd);
		snprintf(why, len, "room.lock: %s", strerror(e));
		return e == EWOULDBLOCK ? -EAGAIN : -1;
	}
	atomic_store(&turn_fd, fd);
	return 0;
}

bool cn_room_turn_free(struct cn_agent *ag)
{
	char why[200];

	if (!cn_nodepager_answered(ag))
		return false;
	if (atomic_load(&turn_fd) >= 0)
		return true;
	if (take_turn(ag, why, sizeof(why)) == -EAGAIN)
		return false;
	cn_room_release();
	return true;
}

void cn_room_release(void)
{
	int fd = atomic_exchange(&turn_fd, -1);

	cn_nodepager_release();
	if (fd >= 0)
		close(fd); /* the flock goes with its last descriptor */
}

/* ---- who may be napped ---- */

struct cand {
	int pid, sig;
	unsigned long long starttime;
	unsigned long seq;
	double idle_s;
	uint64_t bytes;	  /* what its nap would give back on the GPU */
	uint64_t host;	  /* the host memory its nap's copy could take (0: not known) */
	double light_mib; /* what its light nap would give back; < 0: it naps fully */
	double kept_mib;  /* the pinned host copy it keeps for its next light nap */
	double disk_mib;  /* the room its nap takes on disk where the host has none ([nap] to) */
	bool disk;	  /* napped to disk, the host without room for its copy (host_fit) */
};

/* An asked candidate's answer, read from its status: ANS_WAIT (none yet), ANS_NAPPED (napped,
 * fully or lightly), ANS_NOT (it ended its action awake, or is gone). */
enum answer { ANS_WAIT, ANS_NAPPED, ANS_NOT };

/* ---- room made while this process copies in ----
 * A light nap's wake needs its memory back piece by piece, and a light nap gives its memory
 * back piece by piece: the candidates that make the room, when all of them nap lightly, are
 * asked at once and not waited for; the wake copies in while they copy out, each piece mapped as
 * soon as one of theirs is given back (both directions of the bus at once), trying again while
 * cn_room_coming says a candidate has not answered yet; cn_room_settle, after the wake, waits for
 * the answers, takes back the notes and says it. The agent thread's; file-scope, since cuda/light.c
 * asks cn_room_coming, with no argument, while it copies. */
static struct {
	int n;
	struct cand c[CN_USERS_MAX];
	double until[CN_USERS_MAX];
	enum answer a[CN_USERS_MAX];
	int gpu[CN_USERS_MAX];
	uint64_t need[CN_USERS_MAX];
	const char *what;
	struct cn_agent
		*ag; /* whose room: cn_room_coming takes no argument (cuda/light.c calls it) */
	double t0, seen_ms;
	bool coming;
	/* the other candidates that nap lightly, in order: one is asked in place of one that could
	 * not be asked or did not nap */
	struct cand rest[CN_USERS_MAX];
	int n_rest;
} over;

void cn_room_reset(void)
{
	int fd = atomic_exchange(&turn_fd, -1);

	cn_nodepager_reset();
	if (fd >= 0)
		close(fd); /* the parent's lock stays the parent's: its descriptor holds it */
	memset(&over, 0, sizeof(over));
}

static int by_idle(const void *a, const void *b)
{
	const struct cand *x = a, *y = b;

	return x->idle_s < y->idle_s ? 1 : x->idle_s > y->idle_s ? -1 : 0;
}

/* The candidates found so far, as cn_others_each fills them. */
struct cands {
	struct cand *c;
	int n, max;
	unsigned min_idle_s; /* [nap] min_idle_s */
	double soon_s;	     /* the least wait until one idle too briefly is idle enough */
	int soon_pid;	     /* which (0: none) */
};

/* One of this status dir's processes taken as a candidate if it may be napped now. */
static bool take_candidate(const struct cn_status *s, void *arg)
{
	struct cands *cs = arg;
	double idle = cn_status_since_s(s->idle_since);

	if (s->state != CN_STATE_RUNNING || s->busy || cn_outcome_nap_asleep(s->nap) ||
	    s->nap == CN_NAP_REFUSED || idle < 0)
		return true;
	if (idle < cs->min_idle_s) {
		double wait = cs->min_idle_s - idle;

		if (!cs->soon_pid || wait < cs->soon_s) {
			cs->soon_s = wait;
			cs->soon_pid = s->pid;
		}
		return true;
	}
	cs->c[cs->n++] = (struct cand){ .pid = s->pid,
					.sig = s->suspend_signal,
					.starttime = s->starttime,
					.seq = s->seq,
					.idle_s = idle,
					.light_mib = s->light_able_mib,
					.kept_mib = s->host_kept_mib,
					.disk_mib = s->nap_disk_mib };
	return cs->n < cs->max;
}

/* The processes of this status dir that may be napped now, the longest idle first; soon names
 * the first of the others that will be, once idle [nap] min_idle_s. */
static int candidates(struct cn_agent *ag, struct cand *c, int max, struct cn_room_soon *soon)
{
	struct cands cs = { .c = c, .max = max, .min_idle_s = ag->cfg.nap_min_idle_s };

	cn_others_each(ag->cfg.status_dir, take_candidate, &cs);
	qsort(c, (size_t)cs.n, sizeof(*c), by_idle);
	soon->pid = cs.soon_pid;
	soon->at_ms = cs.soon_pid ? cn_clock_ms() + cs.soon_s * 1000 : 0;
	return cs.n;
}

/* What each candidate holds on the GPU, and what is free there; -1 when NVML cannot say. */
static int users(struct cn_agent *ag, const struct cn_uuid *uuid, struct cand *c, int n,
		 uint64_t *free_bytes, int *gpu)
{
	static struct cn_req q;
	struct cn_resp r;

	memset(&q, 0, sizeof(q));
	q.op = CN_OP_USERS;
	q.use[0].uuid = *uuid;
	q.n_pids = (uint32_t)(n < CN_USERS_MAX ? n : CN_USERS_MAX);
	for (uint32_t i = 0; i < q.n_pids; i++)
		q.pids[i] = c[i].pid;
	if (cn_channel_call(ag, &q, &r, cn_report_waiting) < 0 || r.result != CUDA_SUCCESS)
		return -1;
	for (uint32_t i = 0; i < q.n_pids; i++) {
		uint64_t light = (uint64_t)(c[i].light_mib * (1 << 20));

		/* A light nap gives back what cudanap owns: its context stays. */
		c[i].bytes = c[i].light_mib >= 0 && light < r.pid_bytes[i] ? light : r.pid_bytes[i];
		c[i].host = r.pid_host[i];
	}
	*free_bytes = r.free_bytes;
	*gpu = -1;
	for (uint32_t g = 0; g < r.n_gpus && g < CN_MAX_GPUS; g++)
		if (cn_uuid_eq(&r.gpus[g], uuid))
			*gpu = (int)g;
	return 0;
}

/* A candidate asked to nap for this process: its note (what is needed, on which GPU), then its
 * suspend signal. The candidates were read a while ago (each nap before this one waited up to
 * [lock] timeout_ms + 60 s): the signal goes only to the process that wrote the status file
 * (cn_proc_signal), never to one that got its pid since. False when it could not be asked (the
 * note taken back). */
static bool ask_one(struct cn_agent *ag, const struct cand *c, uint64_t need, int gpu)
{
	char note[64], back[64];
	union sigval v = { .sival_int = CN_SIGVAL_NAP };

	snprintf(note, sizeof(note), "%d %llu %d %u\n", (int)getpid(),
		 (unsigned long long)(need >> 20), gpu, ag->cfg.nap_min_idle_s);
	if (cn_notes_put(ag->cfg.status_dir, c->pid, CN_NOTE_NAP_FOR, note) < 0)
		return false;
	if (cn_proc_signal(c->pid, c->starttime, c->sig, &v) == 0)
		return true;
	cn_notes_take(ag->cfg.status_dir, c->pid, CN_NOTE_NAP_FOR, back, sizeof(back));
	return false;
}

static enum answer answer_of(struct cn_agent *ag, const struct cand *c)
{
	struct cn_status s;
	char note[64];

	if (cn_status_read(ag->cfg.status_dir, c->pid, &s) < 0 || s.starttime != c->starttime)
		return ANS_NOT; /* gone */
	if (s.seq <= c->seq || s.busy)
		return ANS_WAIT;
	/* it takes the note once its answer is written: before, what the status says may be the end
	 * of another action of its own */
	if (cn_notes_read(ag->cfg.status_dir, c->pid, CN_NOTE_NAP_FOR, note, sizeof(note)) >= 0)
		return ANS_WAIT;
	return s.state == CN_STATE_CHECKPOINTED || cn_status_light_held(&s) ? ANS_NAPPED : ANS_NOT;
}

/* Its note taken back if it did not take it (gone, or too late). */
static void take_back(struct cn_agent *ag, const struct cand *c)
{
	char back[64];

	cn_notes_take(ag->cfg.status_dir, c->pid, CN_NOTE_NAP_FOR, back, sizeof(back));
}

/* One candidate's line in the log's list of those napped: its bytes and idleness, or that it did
 * not nap; appended to list. */
static void say_napped(char *list, size_t len, const struct cand *c, bool napped)
{
	size_t o = strlen(list);

	if (napped)
		snprintf(list + o, len - o, "%s%d (%llu MiB, idle %.0f s)", o ? ", " : "", c->pid,
			 (unsigned long long)(c->bytes >> 20), c->idle_s);
	else
		snprintf(list + o, len - o, "%s%d did not nap", o ? ", " : "", c->pid);
}

/* Nap one candidate for this process, and wait for it: true when it naps. One napped to disk is
 * waited for as long again as its copy takes at DISK_BYTES_MS. */
static bool nap_one(struct cn_agent *ag, const struct cand *c, uint64_t need, int gpu)
{
	double until = cn_clock_ms() + ag->cfg.lock_timeout_ms + NAP_WAIT_MS +
		       (c->disk ? (double)c->bytes / DISK_BYTES_MS : 0);
	enum answer a = ANS_NOT;

	if (!ask_one(ag, c, need, gpu))
		return false;
	while (cn_clock_ms() < until) {
		struct timespec ts = { 0, 50 * 1000000L };

		nanosleep(&ts, NULL);
		a = answer_of(ag, c);
		if (a != ANS_WAIT)
			break;
	}
	take_back(ag, c);
	return a == ANS_NAPPED;
}

/* The candidates of one GPU, the longest idle first, that make the room with what is free: their
 * count, or -1 when one of them would nap fully (the room is then made one nap at a time). */
static int light_set(const struct cand *c, int n, uint64_t free_bytes, uint64_t want, int *pick)
{
	int k = 0;

	for (int i = 0; i < n && free_bytes < want; i++) {
		if (!c[i].bytes)
			continue;
		if (c[i].light_mib < 0)
			return -1;
		pick[k++] = i;
		free_bytes += c[i].bytes;
	}
	return k;
}

/* The room asked of the candidates picked, each asked at once: 0, or -1 with said. */
/* Candidate c, asked, waited for while the wake copies in. */
static void asked_now(struct cn_agent *ag, const struct cand *c, uint64_t need, int gpu)
{
	over.c[over.n] = *c;
	over.until[over.n] = cn_clock_ms() + ag->cfg.lock_timeout_ms + NAP_WAIT_MS;
	over.a[over.n] = ANS_WAIT;
	over.gpu[over.n] = gpu;
	over.need[over.n++] = need;
}

/* The next of the other candidates asked instead of one that could not be asked or did not nap:
 * true when one was. */
static bool ask_instead(struct cn_agent *ag, uint64_t need, int gpu)
{
	while (over.n_rest > 0 && over.n < CN_USERS_MAX) {
		struct cand c = over.rest[0];

		memmove(over.rest, over.rest + 1, (size_t)--over.n_rest * sizeof(c));
		if (ask_one(ag, &c, need, gpu)) {
			asked_now(ag, &c, need, gpu);
			return true;
		}
	}
	return false;
}

static int ask_all(struct cn_agent *ag, const struct cand *c, const int *pick, int k, int n,
		   const struct cn_room_need *need, int gpu, char *said, size_t len)
{
	int asked = 0;

	over.n_rest = 0;
	for (int i = 0; i < n; i++) {
		bool picked = false;

		for (int j = 0; j < k; j++)
			picked |= pick[j] == i;
		if (!picked && c[i].bytes && c[i].light_mib >= 0)
			over.rest[over.n_rest++] = c[i];
	}
	for (int j = 0; j < k && over.n < CN_USERS_MAX; j++) {
		if (ask_one(ag, &c[pick[j]], need->bytes, gpu))
			asked_now(ag, &c[pick[j]], need->bytes, gpu);
		else if (!ask_instead(ag, need->bytes, gpu))
			continue;
		asked++;
	}
	if (asked)
		return 0;
	snprintf(said, len, "GPU %d: none of the idle processes picked could be asked to nap", gpu);
	return -1;
}

bool cn_room_coming(void)
{
	struct cn_agent *ag = over.ag;
	double now = cn_clock_ms();

	if (cn_nodepager_coming(ag))
		return true;
	if (!over.coming || now - over.seen_ms < 20)
		return over.coming;
	over.seen_ms = now;
	over.coming = false;
	for (int i = 0; i < over.n; i++) { /* over.n grows by those asked instead */
		if (over.a[i] == ANS_WAIT) {
			over.a[i] = now < over.until[i] ? answer_of(ag, &over.c[i]) : ANS_NOT;
			if (over.a[i] == ANS_NOT)
				ask_instead(ag, over.need[i], over.gpu[i]);
		}
		over.coming |= over.a[i] == ANS_WAIT;
	}
	return over.coming;
}

void cn_room_settle(struct cn_agent *ag)
{
	char napped[400] = "";
	int done = 0;

	cn_nodepager_settle(ag);
	if (!over.n)
		return; /* no room made while it copied in */
	while (over.coming) {
		struct timespec ts = { 0, 5 * 1000000L };

		over.seen_ms = 0;
		if (cn_room_coming())
			nanosleep(&ts, NULL);
	}
	for (int i = 0; i < over.n; i++) {
		take_back(ag, &over.c[i]);
		say_napped(napped, sizeof(napped), &over.c[i], over.a[i] == ANS_NAPPED);
		done += over.a[i] == ANS_NAPPED;
	}
	if (done) {
		cn_report_count(ag, CN_REPORT_ROOMS_MADE);
		cn_log(&ag->cfg, CN_LOG_INFO,
		       "made room on GPU %d for %llu MiB (%s): napped %s in %.2f s, lightly, as it "
		       "copied in",
		       over.gpu[0], (unsigned long long)(over.need[0] >> 20), over.what, napped,
		       (cn_clock_ms() - over.t0) / 1000);
		cn_report_write(ag);
	} else {
		cn_log(&ag->cfg, CN_LOG_INFO, "no room made on GPU %d for %llu MiB (%s): %s",
		       over.gpu[0], (unsigned long long)(over.need[0] >> 20), over.what, napped);
	}
	over.n = 0;
}

/* The candidates whose nap the host has no memory for, taken out (their bytes 0), in the order
 * they would be napped until free_bytes reach want: each nap's copy ([preflight] host_margin_mib
 * beside it) and those of the ones before it must fit in the host memory it can take, with the
 * ready host copies of the others (cache.c), which a nap asks back. One whose naps go to disk
 * where the host has no room ([nap] to = auto) stays, if its copy fits there (the driver's, about
 * 1.06 times what it holds), as a full nap: it takes no host memory. What they hold. */
static uint64_t host_fit(struct cn_agent *ag, struct cand *c, int n, uint64_t free_bytes,
			 uint64_t want)
{
	uint64_t margin = (uint64_t)ag->cfg.host_margin_mib << 20, spent = 0, out = 0, disk = 0;
	uint64_t ready = cn_others_kept_bytes(ag->cfg.status_dir) + cn_hostbuf_held_bytes();

	for (int i = 0; i < n && free_bytes < want; i++) {
		/* a light nap into the copy it kept takes no more host memory */
		uint64_t copy =
			c[i].light_mib >= 0 && c[i].kept_mib * (1 << 20) >= (double)c[i].bytes
				? 0
				: c[i].bytes;

		if (!c[i].bytes)
			continue;
		/* its own ready copy is in the host memory it holds already, not to be asked back
		 */
		uint64_t back = ready - (uint64_t)(c[i].kept_mib * (1 << 20) < (double)ready
							   ? c[i].kept_mib * (1 << 20)
							   : (double)ready);

		uint64_t left = c[i].host > spent ? c[i].host - spent : 0;
		/* the driver's copy on disk: those napped there before it take the same disk, as
		 * far as is known */
		uint64_t on_disk = cn_hostmem_checkpoint_bytes(c[i].bytes);

		if (copy && c[i].host && c[i].host + back < spent + copy + margin &&
		    c[i].disk_mib * (1 << 20) >= (double)(disk + on_disk + margin)) {
			cn_log(&ag->cfg, CN_LOG_DEBUG,
			       "make_room: %d's nap needs %llu MiB of host memory, %llu MiB there: "
			       "it naps to disk ([nap] to = auto, %.0f MiB free there)",
			       c[i].pid, (unsigned long long)((copy + margin) >> 20),
			       (unsigned long long)(left >> 20), c[i].disk_mib);
			c[i].light_mib = -1; /* full: napped one at a time */
			c[i].disk = true;
			disk += on_disk;
			free_bytes += c[i].bytes;
			continue;
		}
		if (copy && c[i].host && c[i].host + back < spent + copy + margin) {
			cn_log(&ag->cfg, CN_LOG_DEBUG,
			       "make_room: %d's nap needs %llu MiB of host memory, %llu MiB there",
			       c[i].pid, (unsigned long long)((copy + margin) >> 20),
			       (unsigned long long)(left >> 20));
			out += c[i].bytes;
			c[i].bytes = 0;
			continue;
		}
		spent += copy;
		free_bytes += c[i].bytes;
	}
	return out;
}

/* What the candidates would give back by napping, each said in the debug log. */
static uint64_t candidates_give(struct cn_agent *ag, const struct cand *c, int n)
{
	uint64_t can = 0;

	for (int i = 0; i < n; i++) {
		cn_log(&ag->cfg, CN_LOG_DEBUG, "make_room: candidate %d, idle %.1f s, %llu MiB",
		       c[i].pid, c[i].idle_s, (unsigned long long)(c[i].bytes >> 20));
		can += c[i].bytes;
	}
	return can;
}

/* No nap that cannot make the room: the call fails, or the wake waits, at once. True, said, when
 * the idle processes (no_host: those the host has no memory for) hold too little to nap for. */
static bool refuse_useless_nap(int gpu, uint64_t free_bytes, uint64_t want, uint64_t can,
			       uint64_t no_host, char *said, size_t len)
{
	char host_said[200] = "";

	if ((!can && !no_host) || free_bytes + can >= want)
		return false;
	if (no_host)
		snprintf(host_said, sizeof(host_said),
			 "; %llu MiB more are held by idle processes whose nap's copy the host has "
			 "no memory for ([preflight] host_margin_mib included; [nap] to = auto with a "
			 "[hibernate] dir would nap them to disk)",
			 (unsigned long long)(no_host >> 20));
	snprintf(said, len,
		 "GPU %d has %llu MiB free and its idle processes would give back %llu MiB "
		 "by napping, %llu MiB wanted ([restore] margin_mib included)%s: no process "
		 "napped",
		 gpu, (unsigned long long)(free_bytes >> 20), (unsigned long long)(can >> 20),
		 (unsigned long long)(want >> 20), host_said);
	return true;
}

/* The candidates napped one at a time, in their order, until the GPU has want free (free_bytes
 * and gpu read again after each nap); napped lists each. How many napped. */
static int nap_until_free(struct cn_agent *ag, struct cand *c, int n,
			  const struct cn_room_need *need, uint64_t want, uint64_t *free_bytes,
			  int *gpu, char *napped, size_t len)
{
	int done = 0;

	for (int i = 0; i < n && *free_bytes < want; i++) {
		bool ok;

		if (!c[i].bytes)
			continue;
		ok = nap_one(ag, &c[i], need->bytes, *gpu);
		say_napped(napped, len, &c[i], ok);
		if (!ok)
			continue;
		done++;
		if (users(ag, &need->uuid, c, 0, free_bytes, gpu) < 0)
			break;
	}
	return done;
}

/* ---- the contexts light naps keep ---- */

/* One of this status dir's processes napping lightly, its context kept: one to deepen. */
static bool take_light(const struct cn_status *s, void *arg)
{
	struct cands *cs = arg;

	if (s->busy || !cn_outcome_nap_asleep(s->nap) || s->nap_depth != CN_DEPTH_LIGHT ||
	    s->light_mib <= 0)
		return true;
	cs->c[cs->n++] = (struct cand){ .pid = s->pid,
					.sig = s->suspend_signal,
					.starttime = s->starttime,
					.seq = s->seq,
					.light_mib = -1 /* what it holds there is its context */ };
	return cs->n < cs->max;
}

/* A light napper deepened to the driver's checkpoint by its suspend signal (docs/NAPS.md), its
 * answer waited for: whether it gave its context back. */
static bool deepen_one(struct cn_agent *ag, const struct cand *c)
{
	double until = cn_clock_ms() + ag->cfg.lock_timeout_ms + NAP_WAIT_MS;
	struct cn_status s;

	if (cn_proc_signal(c->pid, c->starttime, c->sig, NULL) < 0)
		return false;
	while (cn_clock_ms() < until) {
		nanosleep(&(struct timespec){ 0, 50 * 1000000L }, NULL);
		if (cn_status_read(ag->cfg.status_dir, c->pid, &s) < 0 ||
		    s.starttime != c->starttime)
			return false;
		if (s.seq > c->seq && !s.busy)
			return s.state == CN_STATE_CHECKPOINTED;
	}
	return false;
}

/* For a new context: the light nappers of the directory on the GPU deepened, one at a time, until
 * want is free there (every one of them, for the GPU to itself), each said in list. Their count. */
static int deepen_light(struct cn_agent *ag, const struct cn_room_need *need, uint64_t want,
			uint64_t *free_bytes, int *gpu, char *list, size_t len)
{
	struct cand c[CN_USERS_MAX];
	struct cands cs = { .c = c, .max = CN_USERS_MAX };
	int done = 0;

	cn_others_each(ag->cfg.status_dir, take_light, &cs);
	if (!cs.n || users(ag, &need->uuid, c, cs.n, free_bytes, gpu) < 0)
		return 0;
	for (int i = 0; i < cs.n && (need->exclusive || *free_bytes < want); i++) {
		size_t o = strlen(list);
		bool ok;

		if (!c[i].bytes)
			continue;
		ok = deepen_one(ag, &c[i]);
		snprintf(list + o, len - o, "%s%d (its light nap deepened)%s", o ? ", " : "",
			 c[i].pid, ok ? "" : " did not answer");
		done += ok;
		if (users(ag, &need->uuid, c, 0, free_bytes, gpu) < 0)
			break;
	}
	return done;
}

/* The GPU to itself (a context refused as unavailable): every idle process of the directory there
 * napped (fully: auto's choice in an exclusive compute mode) and every light napper deepened. 0
 * once one gave its context back, -1 with said. */
static int make_exclusive(struct cn_agent *ag, const struct cn_room_need *need, struct cand *c,
			  int n, int gpu, uint64_t free_bytes, char *said, size_t len)
{
	char napped[400] = "";
	int done = 0;

	for (int i = 0; i < n; i++)
		if (c[i].bytes) {
			bool ok = nap_one(ag, &c[i], 0, gpu);

			say_napped(napped, sizeof(napped), &c[i], ok);
			done += ok;
		}
	done += deepen_light(ag, need, 0, &free_bytes, &gpu, napped, sizeof(napped));
	if (done) {
		cn_log(&ag->cfg, CN_LOG_INFO,
		       "made GPU %d free of this user's other contexts for a new one (its "
		       "exclusive "
		       "compute mode): %s",
		       gpu, napped);
		return 0;
	}
	snprintf(said, len,
		 "GPU %d is in an exclusive compute mode and no process of this user there has a "
		 "context to give back%s%s",
		 gpu, napped[0] ? ": " : "", napped);
	return -1;
}

/* The room made on one GPU: 0 (room there), -1 (none to be made now). */
static int make_one(struct cn_agent *ag, const struct cn_room_need *need, const char *what,
		    bool overlap, struct cn_room_soon *soon, char *said, size_t len)
{
	struct cand c[CN_USERS_MAX];
	int pick[CN_USERS_MAX], k;
	uint64_t free_bytes, want = need->bytes + ((uint64_t)ag->cfg.margin_mib << 20), can;
	uint64_t no_host;
	double t0 = cn_clock_ms();
	char napped[400] = "";
	int n = candidates(ag, c, CN_USERS_MAX, soon), gpu, done;

	if (users(ag, &need->uuid, c, n, &free_bytes, &gpu) < 0) {
		soon->at_ms = 0;
		snprintf(said, len, "NVML cannot say what is free on the GPU");
		return -1;
	}
	if (need->exclusive)
		return make_exclusive(ag, need, c, n, gpu, free_bytes, said, len);
	no_host = host_fit(ag, c, n, free_bytes, want);
	can = candidates_give(ag, c, n);
	if (refuse_useless_nap(gpu, free_bytes, want, can, no_host, said, len))
		return -1;
	if (overlap && free_bytes < want && (k = light_set(c, n, free_bytes, want, pick)) > 0) {
		over.what = what;
		return ask_all(ag, c, pick, k, n, need, gpu, said, len);
	}
	done = nap_until_free(ag, c, n, need, want, &free_bytes, &gpu, napped, sizeof(napped));
	if (need->context && free_bytes < want) /* the contexts light naps keep */
		done += deepen_light(ag, need, want, &free_bytes, &gpu, napped, sizeof(napped));
	if (free_bytes >= want) {
		if (done) {
			cn_report_count(ag, CN_REPORT_ROOMS_MADE);
			cn_log(&ag->cfg, CN_LOG_INFO,
			       "made room on GPU %d for %llu MiB (%s): napped %s in %.2f s", gpu,
			       (unsigned long long)(need->bytes >> 20), what, napped,
			       (cn_clock_ms() - t0) / 1000);
			cn_report_write(ag);
		}
		return 0;
	}
	snprintf(said, len,
		 "GPU %d has %llu MiB free, %llu MiB wanted ([restore] margin_mib included); %s",
		 gpu, (unsigned long long)(free_bytes >> 20), (unsigned long long)(want >> 20),
		 napped[0] ? napped
		 : no_host ? "no idle process of this user there whose nap the host has memory for "
			     "([nap] to = auto with a [hibernate] dir would nap one to disk)"
			   : "no process of this user there idle for [nap] min_idle_s to nap");
	return -1;
}

int cn_room_make(struct cn_agent *ag, const struct cn_room_need *need, int n, const char *what,
		 bool overlap, struct cn_room_soon *soon, char *why, size_t len)
{
	int r;

	why[0] = '\0';
	soon->at_ms = 0;
	soon->pid = 0;
	/* the node pager's where it runs; the GPU to itself (an exclusive compute mode) stays this
	 * user's own business */
	over.ag = ag; /* cn_room_coming's, the node pager's too */
	if (ag->cfg.nap_room_node && !need[0].exclusive) {
		r = cn_nodepager_make(ag, need, n, what, overlap, why, len);
		soon->at_ms = r == -1 ? cn_nodepager_soon_ms() : 0;
		if (r != -ENOTCONN)
			return r;
	}
	r = take_turn(ag, why, len);
	if (r == -EAGAIN) {
		snprintf(why, len, "another process of this user is making room");
		return -EAGAIN;
	}
	if (r < 0)
		return -1;
	over.n = over.n_rest = 0;
	over.ag = ag;
	over.t0 = over.seen_ms = cn_clock_ms();
	/* Overlapped on one GPU only: a need of another GPU that fails would leave the first's
	 * processes asked for nothing. */
	for (int i = 0; i < n; i++)
		if (make_one(ag, &need[i], what, overlap && n == 1, soon, why, len) < 0) {
			cn_room_release();
			return -1;
		}
	over.coming = over.n > 0;
	return 0; /* the turn is kept until the room is used: cn_room_release */
}
