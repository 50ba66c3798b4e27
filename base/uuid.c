/* uuid: a GPU's identity found among a machine's GPUs, and as text (see cn_uuid.h). */
#include "cn_uuid.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <strings.h>

int cn_uuid_index(const struct cn_uuid *all, int n, const struct cn_uuid *u)
{
	for (int i = 0; i < n; i++)
		if (cn_uuid_eq(&all[i], u))
			return i;
	return -1;
}

void cn_uuid_fmt(const struct cn_uuid *uuid, char out[CN_UUID_STR_LEN])
{
	const unsigned char *u = uuid->b;

	snprintf(out, CN_UUID_STR_LEN,
		 "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0],
		 u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13],
		 u[14], u[15]);
}

int cn_uuid_parse(const char *s, struct cn_uuid *uuid)
{
	unsigned char *u = uuid->b;
	int nib = 0;

	if (strncasecmp(s, "GPU-", 4) != 0)
		return -EINVAL;
	for (s += 4; *s; s++) {
		int v;

		if (*s == '-')
			continue;
		if (!isxdigit((unsigned char)*s) || nib >= 32)
			return -EINVAL;
		v = isdigit((unsigned char)*s) ? *s - '0' : (tolower((unsigned char)*s) - 'a' + 10);
		if (nib % 2 == 0)
			u[nib / 2] = (unsigned char)(v << 4);
		else
			u[nib / 2] |= (unsigned char)v;
		nib++;
	}
	return nib == 32 ? 0 : -EINVAL;
}
