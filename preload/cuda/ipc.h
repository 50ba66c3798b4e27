/* ipc: the GPU memory this process has imported from other processes outside NCCL. */
#ifndef CN_IPC_H
#define CN_IPC_H

#include <stddef.h>

/* An import call fn, made from caller (a return address), succeeded: delta 1 opened, -1 closed.
 * Not counted inside a runtime call that ipc.c counts itself, nor from libnccl. */
void cn_ipc_count(const char *fn, const void *caller, int delta);

/* How many imports are held now (0: none), and in who, when there are, the first of them: the
 * call and the object that made it ("cudaIpcOpenMemHandle in libc10_cuda.so"). */
int cn_ipc_imports(char *who, size_t len);

/* In a forked child: the parent's imports are not its own. */
void cn_ipc_after_fork(void);

#endif
