/* ncclenv: NCCL's transports, told by its environment (see cn_ncclenv.h). */
#define _GNU_SOURCE
#include "cn_ncclenv.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Measured on two H200s (driver 580.159.04, NCCL 2.28.9, a two-rank DDP job, both ranks suspended
 * together): with peer-to-peer or shared memory on, both restores failed and the job was lost;
 * with both off every loss came back bit for bit. The rest share GPU memory in the same way and
 * are inferred, not measured. */
const struct cn_ncclenv_var cn_ncclenv_vars[] = {
	{ "NCCL_P2P_DISABLE", "1", NULL, false, false,
	  "measured: peer-to-peer over NVLink or CUDA IPC" },
	{ "NCCL_SHM_DISABLE", "1", NULL, false, false,
	  "measured: memory shared between processes" },
	{ "NCCL_NVLS_ENABLE", "0", NULL, false, false, "inferred: NVLink SHARP multicast memory" },
	{ "NCCL_COLLNET_ENABLE", "0", NULL, true, false,
	  "inferred: GPU buffers registered with the network" },
	{ "NCCL_NET_GDR_LEVEL", "LOC", "0", true, true, "inferred: GPUDirect RDMA" },
};
const size_t cn_ncclenv_n_vars = sizeof(cn_ncclenv_vars) / sizeof(cn_ncclenv_vars[0]);

int cn_ncclenv_apply(char *kept, size_t len)
{
	int n = 0;

	kept[0] = '\0';
	for (size_t i = 0; i < cn_ncclenv_n_vars; i++) {
		const struct cn_ncclenv_var *v = &cn_ncclenv_vars[i];
		const char *now = secure_getenv(v->name);

		if (!now || !*now) {
			n += setenv(v->name, v->value, 1) == 0;
		} else if (!kept[0] && strcasecmp(now, v->value) != 0 &&
			   !(v->alt && strcasecmp(now, v->alt) == 0)) {
			snprintf(kept, len, "%s=%s", v->name, now);
		}
	}
	return n;
}

/* An RDMA device (InfiniBand, RoCE): NCCL would use GPUDirect RDMA through it unless told not. */
static bool have_rdma(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	bool any = false;

	while (d && !any && (e = readdir(d)))
		any = e->d_name[0] != '.';
	if (d)
		closedir(d);
	return any;
}

int cn_ncclenv_check(const char *rdma_dir, char *why, size_t len)
{
	for (size_t i = 0; i < cn_ncclenv_n_vars; i++) {
		const struct cn_ncclenv_var *v = &cn_ncclenv_vars[i];
		const char *now = secure_getenv(v->name);

		if (now && *now &&
		    (strcasecmp(now, v->value) == 0 || (v->alt && strcasecmp(now, v->alt) == 0)))
			continue;
		if ((!now || !*now) && v->unset_ok && !(v->needs_rdma && have_rdma(rdma_dir)))
			continue;
		if (now && *now)
			snprintf(why, len, "%s=%s in its environment (%s)", v->name, now,
				 v->measured);
		else
			snprintf(why, len, "%s is unset%s (%s)", v->name,
				 v->needs_rdma ? " on a machine with an RDMA device" : "",
				 v->measured);
		return -1;
	}
	return 0;
}
