/* pager: an allocation the driver refused as out of memory, or a context as unavailable, with
 * [nap] make_room: room made for it (room.c) and the call tried once more. The app's thread asks,
 * the agent answers. */
#define _GNU_SOURCE
#include "agent/pager.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "cuda/allocargs.h"
#include "clock.h"
#include "cuda_abi.h"
#include "cuda/fns.h"
#include "cuda/gate.h"
#include "agent/log.h"
#include "agent/nodepager.h"
#include "agent/room.h"
#include "agent/state.h"
#include "wake.h"

#define ASK_MS	  120000	 /* an allocation waits this long at most for room */
#define CTX_BYTES (512ull << 20) /* what a new context takes, about (H100: 500-520 MiB) */

/* The app's request, one at a time (ask), and its answer, under mu: file-scope, since the gate
 * calls cn_pager_oom and cn_pager_done in the app's thread, with no context. */
static pthread_mutex_t ask = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static struct {
	bool asked, answered, made;
	struct cn_room_need need;
	const char *what; /* the call, for the log */
	double until_ms;  /* when the agent stops trying */
} req;

void cn_pager_reset(struct cn_pager *pg)
{
	cn_room_reset();
	pthread_mutex_init(&ask, NULL);
	pthread_mutex_init(&mu, NULL);
	pthread_cond_init(&cv, NULL);
	memset(&req, 0, sizeof(req));
	pg->pending = pg->failure_said = pg->wait_said = false;
}

/* ---- an allocation refused: the app's side ---- */

typedef CUresult (*dev_fn)(int *);
typedef CUresult (*uuid_fn)(CUuuid *, int);

/* The bytes the call wanted, and on which device (CUDA's ordinal); false when not known. */
static bool call_need(const char *name, const uint64_t *gp, struct cn_room_need *need, int *dev)
{
	struct cn_alloc_args a;

	if (!cn_allocargs_read(name, gp, false, &a))
		return false;
	need->bytes = a.context ? CTX_BYTES : a.asked;
	need->context = a.context;
	*dev = a.dev;
	if (*dev < 0) { /* the calling thread's context's */
		dev_fn get = (dev_fn)cn_fns_stub(CN_FN_IDX_cuCtxGetDevice);

		if (get(dev) != CUDA_SUCCESS)
			return false;
	}
	return need->bytes > 0;
}

bool cn_pager_oom(unsigned idx, const uint64_t *gp, bool unavailable)
{
	struct cn_room_need need = { .exclusive = unavailable };
	CUuuid id;
	uuid_fn uuid = (uuid_fn)cn_fns_stub(CN_FN_IDX_cuDeviceGetUuid_v2);
	const char *name = cn_lookup_name(idx);
	struct timespec until;
	bool made = false;
	int dev;

	if (!name || !call_need(name, gp, &need, &dev) || (unavailable && !need.context) ||
	    uuid(&id, dev) != CUDA_SUCCESS)
		return false;
	need.uuid = cn_uuid_of_cu(&id);
	pthread_mutex_lock(&ask);
	pthread_mutex_lock(&mu);
	req = (typeof(req)){
		.asked = true, .need = need, .what = name, .until_ms = cn_clock_ms() + ASK_MS
	};
	pthread_mutex_unlock(&mu);
	cn_wake_send(CN_WAKE_ROOM);
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += ASK_MS / 1000 + 5;
	pthread_mutex_lock(&mu);
	while (!req.answered)
		if (pthread_cond_timedwait(&cv, &mu, &until) == ETIMEDOUT)
			break;
	made = req.answered && req.made;
	req.asked = false;
	pthread_mutex_unlock(&mu);
	if (!made)
		pthread_mutex_unlock(&ask);
	return made;
}

void cn_pager_done(void)
{
	cn_room_release();
	pthread_mutex_unlock(&ask);
}

/* ---- an allocation refused: the agent's side ---- */

/* The answer to the waiting thread; room made for a thread that stopped waiting is given back. */
static void answer_app(struct cn_pager *pg, bool made)
{
	bool gone;

	pthread_mutex_lock(&mu);
	gone = !req.asked;
	req.answered = true;
	req.made = made && !gone;
	pthread_cond_broadcast(&cv);
	pthread_mutex_unlock(&mu);
	if (made && gone)
		cn_room_release();
	pg->pending = false;
}

static void serve_app(struct cn_agent *ag, struct cn_pager *pg)
{
	struct cn_room_need need;
	struct cn_room_soon soon;
	const char *what;
	char why[600];
	double until;
	int r;

	pthread_mutex_lock(&mu);
	if (!req.asked || req.answered) {
		pthread_mutex_unlock(&mu);
		pg->pending = false;
		return;
	}
	need = req.need;
	what = req.what;
	until = req.until_ms;
	pthread_mutex_unlock(&mu);
	r = cn_room_make(ag, &need, 1, what, false, &soon, why, sizeof(why));
	if (r == -EAGAIN && cn_clock_ms() < until) {
		pg->pending = true; /* tried again at the next tick */
		/* a wait that may be long is said once, a second in */
		if (!pg->wait_said && cn_clock_ms() > until - ASK_MS + 1000) {
			cn_log(&ag->cfg, CN_LOG_INFO,
			       "%s: out of memory; %s on that GPU: the call waits for its turn, "
			       "%.0f s more at most",
			       what, why, (until - cn_clock_ms()) / 1000);
			pg->wait_said = true;
		}
		return;
	}
	pg->wait_said = false;
	if (r < 0 && !pg->failure_said)
		cn_log(&ag->cfg, CN_LOG_INFO,
		       "%s: out of memory, and no room could be made (%s): the call fails as it "
		       "would have",
		       what, why);
	pg->failure_said = r < 0;
	answer_app(pg, r == 0);
}

void cn_pager_asked(struct cn_agent *ag, struct cn_pager *pg)
{
	pg->pending = true;
	serve_app(ag, pg);
}

int cn_pager_timeout_ms(const struct cn_pager *pg)
{
	return pg->pending ? 100 : cn_nodepager_timeout_ms();
}

void cn_pager_tick(struct cn_agent *ag, struct cn_pager *pg)
{
	cn_nodepager_tick(ag);
	if (pg->pending)
		serve_app(ag, pg);
}
