/* json: strings written as JSON. */
#ifndef CN_JSON_H
#define CN_JSON_H

#include <stddef.h>

/* s as a JSON string, quotes included, into a bounded buffer (six bytes per character at worst);
 * returns the bytes written, or -1 when it does not fit. */
int cn_json_str(char *out, size_t len, const char *s);

#endif
