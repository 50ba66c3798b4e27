/* ncclenv: which of NCCL's transports a checkpoint survives, told and set by the environment NCCL
 * reads (docs/FILES.md). */
#ifndef CN_NCCLENV_H
#define CN_NCCLENV_H

#include <stdbool.h>
#include <stddef.h>

struct cn_ncclenv_var {
	const char *name;
	const char *value;    /* what [nccl] suspendable sets */
	const char *alt;      /* another value that is as safe, or NULL */
	bool unset_ok;	      /* NCCL's default is safe: unset needs no value */
	bool needs_rdma;      /* ... unless the machine has an RDMA device */
	const char *measured; /* how we know: "measured ..." or "inferred ..." */
};

extern const struct cn_ncclenv_var cn_ncclenv_vars[];
extern const size_t cn_ncclenv_n_vars;

/* [nccl] suspendable: put each safe value into the environment where the variable is unset or
 * empty; a value set otherwise is kept. kept gets "NAME=VALUE" of the first kept one ("" when
 * none). Returns how many were set. Call before any thread can read the environment. */
int cn_ncclenv_apply(char *kept, size_t len);

/* 0 when NCCL, reading this environment, would use only transports a checkpoint survives. Else -1,
 * and why says which variable and what it holds ("NCCL_P2P_DISABLE is unset", ...). rdma_dir is
 * where RDMA devices are listed (/sys/class/infiniband). */
int cn_ncclenv_check(const char *rdma_dir, char *why, size_t len);

#endif
