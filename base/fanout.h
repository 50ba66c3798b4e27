/* fanout: one piece of work split over threads, the caller among them. */
#ifndef CN_FANOUT_H
#define CN_FANOUT_H

#define CN_FANOUT_MAX 256

/* Run fn(ctx, 0) here and fn(ctx, 1..n-1) on threads of their own (at most CN_FANOUT_MAX), then
 * wait for all of them; a part whose thread cannot be started runs here too. The helpers start
 * with every signal blocked: signals meant for the app never land on them. */
void cn_fanout(unsigned n, void (*fn)(void *ctx, unsigned part), void *ctx);

#endif
