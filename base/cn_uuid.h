/* uuid: a GPU's identity, the 16 bytes the driver and NVML give it, compared, found and written. */
#ifndef CN_UUID_H
#define CN_UUID_H

#include <stdbool.h>
#include <string.h>

#define CN_UUID_STR_LEN 41 /* "GPU-" + 36 + NUL */

struct cn_uuid {
	unsigned char b[16];
};

/* The wire (ctl_proto.h) and the driver's ABI (cuda_abi.h) carry it as its 16 bytes. */
_Static_assert(sizeof(struct cn_uuid) == 16, "a GPU's UUID is 16 bytes");
_Static_assert(_Alignof(struct cn_uuid) == 1, "a GPU's UUID is aligned as bytes are");

static inline bool cn_uuid_eq(const struct cn_uuid *a, const struct cn_uuid *b)
{
	return memcmp(a->b, b->b, sizeof(a->b)) == 0;
}

/* The index of u among the n GPUs of all, -1 if absent. */
int cn_uuid_index(const struct cn_uuid *all, int n, const struct cn_uuid *u);

/* "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx", as nvidia-smi writes it. */
void cn_uuid_fmt(const struct cn_uuid *u, char out[CN_UUID_STR_LEN]);

/* That text (any case, dashes anywhere); 0 or -EINVAL. */
int cn_uuid_parse(const char *s, struct cn_uuid *u);

#endif
