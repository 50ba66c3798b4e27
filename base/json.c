/* json: a string as JSON writes it (see cn_json.h). */
#include "cn_json.h"

#include <stdio.h>
#include <string.h>

int cn_json_str(char *out, size_t len, const char *s)
{
	size_t o = 0;

	if (len < 3)
		return -1;
	out[o++] = '"';
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;
		char esc[8];
		size_t n;

		if (ch == '"' || ch == '\\')
			n = (size_t)snprintf(esc, sizeof(esc), "\\%c", ch);
		else if (ch < 0x20)
			n = (size_t)snprintf(esc, sizeof(esc), "\\u%04x", ch);
		else
			n = (size_t)snprintf(esc, sizeof(esc), "%c", ch);
		if (o + n + 2 > len)
			return -1;
		memcpy(out + o, esc, n);
		o += n;
	}
	out[o++] = '"';
	out[o] = '\0';
	return (int)o;
}
