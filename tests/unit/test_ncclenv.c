/* Unit tests of NCCL's environment: what [nccl] suspendable sets and keeps, and which settings the
 * preflight accepts as transports a checkpoint survives. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cn_ncclenv.h"
#include "tap.h"

static char rdma[] = "/tmp/cn-rdma-XXXXXX";

static void clear(void)
{
	for (size_t i = 0; i < cn_ncclenv_n_vars; i++)
		unsetenv(cn_ncclenv_vars[i].name);
}

/* The measured-safe pair and NVLS off, nothing else: what a user who read the README sets. */
static void sockets_only(void)
{
	clear();
	setenv("NCCL_P2P_DISABLE", "1", 1);
	setenv("NCCL_SHM_DISABLE", "1", 1);
	setenv("NCCL_NVLS_ENABLE", "0", 1);
}

static void expect_refused(const char *want, const char *what)
{
	char why[300] = "";

	ok(cn_ncclenv_check(rdma, why, sizeof(why)) < 0, "%s: refused", what);
	ok(strncmp(why, want, strlen(want)) == 0, "%s: says '%s'", what, want);
	if (strncmp(why, want, strlen(want)) != 0)
		printf("#   got: '%s'\n", why);
}

int main(void)
{
	char kept[200], why[300], path[300];

	if (!mkdtemp(rdma))
		return 1;
	clear();
	ok(cn_ncclenv_apply(kept, sizeof(kept)) == (int)cn_ncclenv_n_vars && kept[0] == '\0',
	   "apply sets every variable of an empty environment, keeps none");
	is_str(getenv("NCCL_P2P_DISABLE"), "1", "NCCL_P2P_DISABLE=1");
	is_str(getenv("NCCL_SHM_DISABLE"), "1", "NCCL_SHM_DISABLE=1");
	is_str(getenv("NCCL_NVLS_ENABLE"), "0", "NCCL_NVLS_ENABLE=0");
	is_str(getenv("NCCL_NET_GDR_LEVEL"), "LOC", "NCCL_NET_GDR_LEVEL=LOC");
	ok(cn_ncclenv_check(rdma, why, sizeof(why)) == 0, "what apply sets passes the check");

	clear();
	setenv("NCCL_P2P_DISABLE", "0", 1);
	setenv("NCCL_SHM_DISABLE", "", 1);
	setenv("NCCL_NET_GDR_LEVEL", "0", 1);
	ok(cn_ncclenv_apply(kept, sizeof(kept)) == (int)cn_ncclenv_n_vars - 2,
	   "apply leaves variables the user set");
	is_str(kept, "NCCL_P2P_DISABLE=0", "and names the one that keeps the job from being safe");
	is_str(getenv("NCCL_P2P_DISABLE"), "0", "the user's value wins");
	is_str(getenv("NCCL_SHM_DISABLE"), "1", "an empty value counts as unset");
	is_str(getenv("NCCL_NET_GDR_LEVEL"), "0", "GDR level 0 (= LOC) is kept, and not reported");
	expect_refused("NCCL_P2P_DISABLE=0 in its environment (measured",
		       "P2P on, set by the user");

	clear();
	expect_refused("NCCL_P2P_DISABLE is unset", "an empty environment (NCCL's defaults)");
	sockets_only();
	unsetenv("NCCL_SHM_DISABLE");
	expect_refused("NCCL_SHM_DISABLE is unset", "shared memory left on");
	sockets_only();
	unsetenv("NCCL_NVLS_ENABLE");
	expect_refused("NCCL_NVLS_ENABLE is unset (inferred", "NVLS left to NCCL's default");
	sockets_only();
	ok(cn_ncclenv_check(rdma, why, sizeof(why)) == 0,
	   "sockets only, without an RDMA device: CollNet and GDR defaults are safe");
	setenv("NCCL_COLLNET_ENABLE", "1", 1);
	expect_refused("NCCL_COLLNET_ENABLE=1", "CollNet on");
	sockets_only();
	setenv("NCCL_NET_GDR_LEVEL", "loc", 1);
	ok(cn_ncclenv_check(rdma, why, sizeof(why)) == 0, "GDR level 'loc' in any case");
	setenv("NCCL_NET_GDR_LEVEL", "PHB", 1);
	expect_refused("NCCL_NET_GDR_LEVEL=PHB", "GPUDirect RDMA asked for");
	snprintf(path, sizeof(path), "%s/mlx5_0", rdma);
	mkdir(path, 0700);
	sockets_only();
	expect_refused("NCCL_NET_GDR_LEVEL is unset on a machine with an RDMA device",
		       "GDR left to NCCL's default beside an RDMA device");
	setenv("NCCL_NET_GDR_LEVEL", "LOC", 1);
	ok(cn_ncclenv_check(rdma, why, sizeof(why)) == 0, "... and safe once LOC");
	ok(cn_ncclenv_check("/nonexistent", why, sizeof(why)) == 0,
	   "no RDMA class directory at all");
	rmdir(path);
	rmdir(rdma);
	return tap_done();
}
