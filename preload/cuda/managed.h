/* managed: the managed memory the app holds, which the driver cannot checkpoint. See managed.c. */
#ifndef CN_MANAGED_H
#define CN_MANAGED_H

#include <stddef.h>
#include <stdint.h>

/* cuMemAllocManaged, made from caller (a return address), gave ptr. */
void cn_managed_alloc(uint64_t ptr, const void *caller);
/* A free of ptr (any pointer: those not managed are not ours to count). */
void cn_managed_free(uint64_t ptr);
/* Allocations held now (0: none), and in who, when there are, the first: "cuMemAllocManaged in
 * libfoo.so". */
int cn_managed_held(char *who, size_t len);
/* In a forked child: the parent's allocations are not its own. */
void cn_managed_after_fork(void);

#endif
