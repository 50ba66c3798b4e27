/* status: format, parse and atomically replace the status file (see cn_status.h). */
#define _GNU_SOURCE
#include "cn_status.h"

#include <ctype.h>
#include <signal.h>
#include <stddef.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cn_json.h"
#include "cn_safe.h"
#include "cn_signame.h"

/* The file's fields, in its order (the counters follow: cn_counts_json): each written and read
 * by its type. F_STATE and F_RESULT are written as words of their own (cn_status_state,
 * cn_status_result); F_WORD is an enum's word (its table: enum fword); F_STEPS the steps' times,
 * "NAME_ms" each (the steps' table), numbers as F_NUM; F_NUM a number of the action's that may
 * be null (< 0 in the struct), cleared at each action; F_KEPT the same kept across actions (the
 * query's and the naps'). */
enum ftype {
	F_INT,
	F_ULL,
	F_UL,
	F_BOOL,
	F_TEXT,
	F_WORD,
	F_STEPS,
	F_NUM,
	F_KEPT,
	F_STATE,
	F_RESULT
};

/* The enums whose words F_WORD fields are. */
enum fword { W_ACTION, W_ASK, W_NAP, W_DEPTH, W_DEPTH_WHY };

CN_NAMES_DEFINE(cn_status_step, enum cn_step, CN_STEP_PREPARE, CN_STEPS, "prepare", "lock",
		"checkpoint", "hibernate", "readback", "wait", "restore", "unlock")
_Static_assert(sizeof(cn_status_step_words) / sizeof(cn_status_step_words[0]) == CN_STEPS,
	       "a word for every step");

#define AT(field) offsetof(struct cn_status, field)
#define INT(field)                                                                                 \
	{                                                                                          \
#field, AT(field), F_INT, 0                                                        \
	}
#define ULL(field)                                                                                 \
	{                                                                                          \
#field, AT(field), F_ULL, 0                                                        \
	}
#define UL(field)                                                                                  \
	{                                                                                          \
#field, AT(field), F_UL, 0                                                         \
	}
#define BOOL(field)                                                                                \
	{                                                                                          \
#field, AT(field), F_BOOL, 0                                                       \
	}
#define TEXT(field)                                                                                \
	{                                                                                          \
#field, AT(field), F_TEXT, sizeof(((struct cn_status *)0)->field)                  \
	}
#define WORD(field, kind)                                                                          \
	{                                                                                          \
#field, AT(field), F_WORD, kind                                                    \
	}
#define NUM(field)                                                                                 \
	{                                                                                          \
#field, AT(field), F_NUM, 0                                                        \
	}
#define KEPT(field)                                                                                \
	{                                                                                          \
#field, AT(field), F_KEPT, 0                                                       \
	}
static const struct field {
	const char *key;
	size_t off;
	enum ftype type;
	size_t arg; /* F_TEXT: its size; F_WORD: its kind */
} fields[] = {
	INT(pid),
	ULL(starttime),
	TEXT(command),
	{ "state", AT(state), F_STATE, 0 },
	BOOL(busy),
	UL(seq),
	WORD(action, W_ACTION),
	{ "result", AT(result_name), F_RESULT, sizeof(((struct cn_status *)0)->result_name) },
	{ "result_code", AT(result), F_INT, 0 },
	TEXT(message),
	{ "", AT(step_ms), F_STEPS, 0 },
	NUM(total_ms),
	NUM(staged_mib),
	NUM(prefault_ms),
	NUM(unmap_ms),
	NUM(copy_mib),
	NUM(copy_ms),
	NUM(footprint_mib),
	NUM(reserve_ms),
	KEPT(host_mib),
	KEPT(disk_mib),
	ULL(call_ns),
	TEXT(timestamp),
	INT(suspend_signal),
	INT(resume_signal),
	BOOL(prepared),
	TEXT(gpus),
	TEXT(home_gpus),
	TEXT(restore_gpus),
	TEXT(nccl),
	TEXT(nccl_keys),
	UL(query_seq),
	UL(naps),
	UL(wakes),
	UL(naps_idle),
	UL(naps_asked),
	UL(naps_room),
	UL(naps_full_host),
	UL(naps_full_exclusive),
	UL(naps_full_disk),
	INT(nap_for_pid),
	UL(rooms_made),
	UL(restores),
	/* The query's and the naps' fields, kept across actions. */
	TEXT(query_time),
	WORD(suspendable, W_ASK),
	TEXT(why_not),
	TEXT(gpu_now),
	TEXT(gpu_model),
	TEXT(host_bound),
	TEXT(est_source),
	TEXT(inside),
	TEXT(peer),
	TEXT(beside),
	WORD(nap, W_NAP),
	TEXT(nap_why),
	WORD(nap_depth, W_DEPTH),
	TEXT(nap_for_user),
	TEXT(room_last),
	WORD(depth_why, W_DEPTH_WHY),
	TEXT(idle_since),
	TEXT(released_gpus),
	KEPT(gpu_now_mib),
	KEPT(host_need_mib),
	KEPT(host_room_mib),
	KEPT(est_suspend_s),
	KEPT(est_resume_s),
	KEPT(last_wake_ms),
	KEPT(released_since),
	KEPT(released_byte_s),
	KEPT(nap_for_mib),
	KEPT(light_mib),
	KEPT(light_ms),
	KEPT(light_able_mib),
	KEPT(host_kept_mib),
	KEPT(nap_disk_mib),
};
#undef AT
#undef INT
#undef ULL
#undef UL
#undef BOOL
#undef TEXT
#undef WORD
#undef NUM
#undef KEPT
#define N_FIELDS (sizeof(fields) / sizeof(fields[0]))
_Static_assert(sizeof(enum cn_action) == sizeof(int) && sizeof(enum cn_ask) == sizeof(int) &&
		       sizeof(enum cn_nap) == sizeof(int) && sizeof(enum cn_depth) == sizeof(int) &&
		       sizeof(enum cn_depth_why) == sizeof(int),
	       "F_WORD fields are read and written as int");

/* Each F_WORD field's enum: its word of a value, and back. */
static const struct {
	const char *(*to_string)(int v);
	int (*from_string)(const char *s);
} words[] = {
	[W_ACTION] = { cn_outcome_action_to_string, cn_outcome_action_from_string },
	[W_ASK] = { cn_outcome_ask_to_string, cn_outcome_ask_from_string },
	[W_NAP] = { cn_outcome_nap_to_string, cn_outcome_nap_from_string },
	[W_DEPTH] = { cn_config_depth_to_string, cn_config_depth_from_string },
	[W_DEPTH_WHY] = { cn_outcome_depth_why_to_string, cn_outcome_depth_why_from_string },
};

/* A string of the struct escaped (six bytes a character at worst) and quoted: its widest. */
#define JSON_MAX (CN_STATUS_GPUS * 6 + 3)
_Static_assert(CN_STATUS_GPUS >= sizeof(((struct cn_status *)0)->peer) &&
		       CN_STATUS_GPUS >= sizeof(((struct cn_status *)0)->message),
	       "the GPUs' lists are the status's widest strings");

static void *at(const struct cn_status *s, const struct field *f)
{
	return (char *)s + f->off;
}

/* The rest of an action's time beyond its steps is said when it is this large. */
#define OTHER_MS 50.0

size_t cn_status_steps(const struct cn_status *s, char *buf, size_t len)
{
	double sum = 0;
	size_t o = 0;

	buf[0] = '\0';
	for (int i = 0; i <= CN_STEPS && o < len; i++) {
		double ms = i < CN_STEPS ? s->step_ms[i] : s->total_ms - sum;
		const char *name = i < CN_STEPS ? cn_status_step_to_string(i) : "other";

		if (ms < 0 || (i == CN_STEPS && (!o || ms < OTHER_MS)))
			continue;
		sum += ms;
		o += (size_t)snprintf(buf + o, len - o, "%s%s ", o ? ", " : "", name);
		if (o < len)
			o += (size_t)snprintf(buf + o, len - o, ms < 1000 ? "%.1f ms" : "%.2f s",
					      ms < 1000 ? ms : ms / 1000);
	}
	return o < len ? o : len - 1;
}

void cn_status_new_action(struct cn_status *s, int action)
{
	s->action = action;
	s->busy = true;
	s->result = CN_RES_NONE;
	s->result_name[0] = s->message[0] = '\0';
	for (size_t i = 0; i < N_FIELDS; i++)
		if (fields[i].type == F_NUM)
			*(double *)at(s, &fields[i]) = -1;
	for (int i = 0; i < CN_STEPS; i++)
		s->step_ms[i] = -1;
	s->call_ns = 0;
}

void cn_status_init(struct cn_status *s, int pid)
{
	memset(s, 0, sizeof(*s));
	s->pid = pid;
	s->state = CN_STATE_UNKNOWN;
	s->suspend_signal = SIGUSR1;
	s->resume_signal = SIGUSR2;
	s->nap_depth = CN_DEPTH_NONE;
	cn_status_new_action(s, CN_ACTION_START);
	s->busy = false;
	for (size_t i = 0; i < N_FIELDS; i++)
		if (fields[i].type == F_KEPT)
			*(double *)at(s, &fields[i]) = -1;
}

/* A CUDA result's name as the driver writes them: CUDA_ERROR_ and capitals, digits, '_'. */
static bool cuda_name(const char *n)
{
	if (strncmp(n, "CUDA_ERROR_", 11) != 0)
		return false;
	for (; *n; n++)
		if (!isupper((unsigned char)*n) && !isdigit((unsigned char)*n) && *n != '_')
			return false;
	return true;
}

bool cn_status_light_held(const struct cn_status *s)
{
	/* From the light nap's outcome on, light_mib says what is on the host. */
	return s->state == CN_STATE_RUNNING && s->nap_depth == CN_DEPTH_LIGHT && s->light_mib > 0;
}

enum cn_state cn_status_state_of(const struct cn_status *s)
{
	/* Asleep by a nap: its nap says so, or the nap that checkpointed it just ended (its nap
	 * state is written right after). */
	bool napping = (s->state == CN_STATE_CHECKPOINTED &&
			(cn_outcome_nap_asleep(s->nap) || s->action == CN_ACTION_NAP)) ||
		       cn_status_light_held(s);

	return napping ? CN_STATE_NAPPING : s->state;
}

const char *cn_status_state(const struct cn_status *s)
{
	return cn_outcome_state_to_string(cn_status_state_of(s));
}

const char *cn_status_result(const struct cn_status *s)
{
	const char *name = cn_outcome_result_name(s->result);

	if (name)
		return name;
	return s->result > 0 && cuda_name(s->result_name) ? s->result_name : "CUDA_ERROR_UNKNOWN";
}

/* A number that may be null (< 0), as the file says it. */
static int format_num(double d, char *buf, size_t len)
{
	return d < 0 || !isfinite(d) || d > CN_STATUS_NUM_MAX ? snprintf(buf, len, "null")
							      : snprintf(buf, len, "%.3f", d);
}

/* One field's value, as the file says it, at buf: its length, or -1 when it does not fit. Every
 * string escaped, whoever wrote it: a file another user made is formatted again by the CLI's
 * --json. */
static int format_value(const struct cn_status *s, const struct field *f, char *buf, size_t len)
{
	const void *v = at(s, f);

	switch (f->type) {
	case F_INT:
		return snprintf(buf, len, "%d", *(const int *)v);
	case F_ULL:
		return snprintf(buf, len, "%llu", *(const unsigned long long *)v);
	case F_UL:
		return snprintf(buf, len, "%lu", *(const unsigned long *)v);
	case F_BOOL:
		return snprintf(buf, len, "%s", *(const bool *)v ? "true" : "false");
	case F_NUM:
	case F_KEPT:
		return format_num(*(const double *)v, buf, len);
	case F_STATE:
		return cn_json_str(buf, len, cn_status_state(s));
	case F_RESULT:
		return cn_json_str(buf, len, cn_status_result(s));
	case F_WORD:
		return cn_json_str(buf, len, words[f->arg].to_string(*(const int *)v));
	case F_STEPS:
		return -1; /* several keys: cn_status_format writes them */
	case F_TEXT:
		return cn_json_str(buf, len, v);
	}
	return -1;
}

int cn_status_format(const struct cn_status *s, char *buf, size_t len)
{
	size_t o = 0;
	int n;

	for (size_t i = 0; i < N_FIELDS; i++) {
		char v[JSON_MAX];

		for (int k = 0; fields[i].type == F_STEPS && k < CN_STEPS; k++) {
			format_num(s->step_ms[k], v, sizeof(v));
			n = snprintf(buf + o, len - o, ",\"%s_ms\":%s", cn_status_step_to_string(k),
				     v);
			if (n < 0 || (size_t)n >= len - o)
				return -ENOSPC;
			o += (size_t)n;
		}
		if (fields[i].type == F_STEPS)
			continue;
		n = format_value(s, &fields[i], v, sizeof(v));
		if (n < 0 || (size_t)n >= sizeof(v))
			return -ENOSPC;
		n = snprintf(buf + o, len - o, "%s\"%s\":%s", i ? "," : "{", fields[i].key, v);
		if (n < 0 || (size_t)n >= len - o)
			return -ENOSPC;
		o += (size_t)n;
	}
	n = cn_counts_json(&s->counts, buf + o, len - o);
	if (n < 0)
		return -ENOSPC;
	o += (size_t)n;
	n = snprintf(buf + o, len - o, "}\n");
	if (n < 0 || (size_t)n >= len - o)
		return -ENOSPC;
	return (int)(o + (size_t)n);
}

/* ---- parsing: a flat object of strings, numbers, booleans and nulls ---- */

static const char *skip_ws(const char *p)
{
	while (isspace((unsigned char)*p))
		p++;
	return p;
}

static const char *get_str(const char *p, char *out, size_t len)
{
	size_t o = 0;

	if (*p++ != '"')
		return NULL;
	while (*p && *p != '"') {
		char ch = *p++;

		if (ch == '\\') {
			ch = *p++;
			if (ch == 'u') {
				char hex[5] = { 0 };

				if (strlen(p) < 4)
					return NULL;
				memcpy(hex, p, 4);
				/* What cudanap writes escaped is a control character; anything
				 * else is no byte of a string of ours, and no half of a UTF-8
				 * sequence to hand a terminal or a JSON reader. */
				ch = strtol(hex, NULL, 16) < 0x80 ? (char)strtol(hex, NULL, 16)
								  : '?';
				p += 4;
			} else if (ch == 'n') {
				ch = '\n';
			} else if (ch == 't') {
				ch = '\t';
			} else if (ch != '"' && ch != '\\' && ch != '/') {
				return NULL;
			}
		}
		if (o + 1 < len)
			out[o++] = ch;
	}
	if (*p != '"')
		return NULL;
	out[o] = '\0';
	return p + 1;
}

/* A number as JSON writes one, finite and of a size a status file can hold: a file another user
 * wrote is read by root, whose --json and metrics must stay valid (nan, inf, 1e999 are not). */
static bool number_ok(const char *v)
{
	const char *p = v + (*v == '-');
	char *end;
	double d;

	/* JSON's grammar: digits, a fraction, an exponent; no hex, no words. */
	if (!isdigit((unsigned char)*p))
		return false;
	p += strspn(p, "0123456789");
	if (*p == '.' && isdigit((unsigned char)p[1]))
		p += 1 + strspn(p + 1, "0123456789");
	if (*p == 'e' || *p == 'E') {
		p += 1 + (p[1] == '+' || p[1] == '-');
		if (!isdigit((unsigned char)*p))
			return false;
		p += strspn(p, "0123456789");
	}
	if (*p)
		return false;
	d = strtod(v, &end);
	return isfinite(d) && fabs(d) <= CN_STATUS_NUM_MAX;
}

/* The length of the UTF-8 sequence of a character at p (at most n bytes there), 0 when it is
 * none by a strict decoder's rules (RFC 3629): a stray continuation byte, a cut sequence, an
 * overlong form (C0 80, E0 80 80, F0 80 80 80), a surrogate (ED A0 80 to ED BF BF) or a code point
 * above U+10FFFF (F4 90 80 80 on). What another user's process put in its command line reaches
 * root's --json and metrics, whose readers (Prometheus's parser, node_exporter) refuse the whole
 * file for one such sequence. */
static size_t utf8_len(const char *p, size_t n)
{
	const unsigned char *u = (const unsigned char *)p;
	size_t len = u[0] < 0x80	     ? 1
		     : (u[0] & 0xe0) == 0xc0 ? 2
		     : (u[0] & 0xf0) == 0xe0 ? 3
		     : (u[0] & 0xf8) == 0xf0 ? 4
					     : 0;
	/* The second byte's range after the lead bytes that narrow it; 80-BF after the others. */
	unsigned char lo = u[0] == 0xe0	  ? 0xa0
			   : u[0] == 0xf0 ? 0x90
					  : 0x80,
		      hi = u[0] == 0xed	  ? 0x9f
			   : u[0] == 0xf4 ? 0x8f
					  : 0xbf;

	if (!len || len > n || (len == 2 && u[0] < 0xc2) || (len == 4 && u[0] > 0xf4))
		return 0;
	if (len > 1 && (u[1] < lo || u[1] > hi))
		return 0;
	for (size_t i = 2; i < len; i++)
		if ((u[i] & 0xc0) != 0x80)
			return 0;
	return len;
}

/* Truncating copy: a too-long field from an edited file must not break the reader. Control
 * characters become a space (tab, newline, return) or '?': what a reader prints goes to a terminal,
 * and a file another user wrote could otherwise set its colours or title (C0, DEL, C1 as UTF-8, and
 * a lone 8-bit CSI). */
void cn_status_text(char *dst, size_t len, const char *v)
{
	size_t n = strnlen(v, len - 1);

	memcpy(dst, v, n);
	dst[n] = '\0';
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)dst[i];
		size_t k = utf8_len(dst + i, n - i);

		if (c == '\t' || c == '\n' || c == '\r')
			dst[i] = ' ';
		else if (c < 0x20 || c == 0x7f ||
			 !k) /* no UTF-8: root's --json must stay readable */
			dst[i] = '?';
		else if (c == 0xc2 && (unsigned char)dst[i + 1] <= 0x9f) /* a C1 control */
			dst[i] = dst[i + 1] = '?';
		if (k > 1)
			i += k - 1;
	}
}

/* An integer as the writer writes one: digits only (a '-' first when neg_ok), its magnitude at
 * most max, into *out; false for anything else (a fraction, an exponent, a number out of range:
 * "-1" in an unsigned field is no count of ours, and strtoull would wrap it). */
static bool integer(const char *v, bool neg_ok, unsigned long long max, unsigned long long *out)
{
	const char *d = v + (neg_ok && *v == '-');

	if (!isdigit((unsigned char)*d) || d[strspn(d, "0123456789")])
		return false;
	errno = 0;
	*out = strtoull(d, NULL, 10);
	return !errno && *out <= max;
}

/* The step whose time a key is ("lock_ms"); -1 for another key. */
static int step_of(const char *key)
{
	size_t n = strlen(key);
	char name[32];

	if (n < 4 || n >= sizeof(name) || strcmp(key + n - 3, "_ms") != 0)
		return -1;
	memcpy(name, key, n - 3);
	name[n - 3] = '\0';
	return cn_status_step_from_string(name) < CN_STEPS ? cn_status_step_from_string(name) : -1;
}

/* One key's value into s; false when the file is not to be believed for it: a number of ours
 * given as a string, or as one not finite and bounded (number_ok), an integer field's value that is
 * none in its type's range, a boolean that is not true or false. Keys not of the table (a newer
 * version's) are left out. */
static bool set_field(struct cn_status *s, const char *key, const char *v, bool is_null,
		      bool quoted)
{
	const struct field *f = NULL;
	unsigned long long n;
	int step;
	void *p;

	for (size_t i = 0; i < N_FIELDS && !f; i++)
		if (fields[i].type != F_STEPS && strcmp(key, fields[i].key) == 0)
			f = &fields[i];
	if (!f && (step = step_of(key)) >= 0) {
		if (!is_null && (quoted || !number_ok(v)))
			return false;
		s->step_ms[step] = is_null ? -1 : strtod(v, NULL);
		return true;
	}
	if (!f) {
		cn_counts_field(&s->counts, key,
				v); /* its own checks: left out when not well formed */
		return true;
	}
	p = at(s, f);
	switch (f->type) {
	case F_INT: /* INT_MIN's magnitude is more than INT_MAX: not one the writer writes */
		if (quoted || !integer(v, true, INT_MAX, &n))
			return false;
		*(int *)p = *v == '-' ? -(int)n : (int)n;
		break;
	case F_ULL:
		if (quoted || !integer(v, false, ULLONG_MAX, &n))
			return false;
		*(unsigned long long *)p = n;
		break;
	case F_UL:
		if (quoted || !integer(v, false, ULONG_MAX, &n))
			return false;
		*(unsigned long *)p = (unsigned long)n;
		break;
	case F_BOOL:
		if (quoted || (strcmp(v, "true") != 0 && strcmp(v, "false") != 0))
			return false;
		*(bool *)p = strcmp(v, "true") == 0;
		break;
	case F_NUM:
	case F_KEPT:
		if (!is_null && (quoted || !number_ok(v)))
			return false;
		*(double *)p = is_null ? -1 : strtod(v, NULL);
		break;
	case F_STATE: /* a nap's word, "napping", is read as checkpointed */
		s->state = cn_outcome_state_from_string(v) == CN_STATE_NAPPING
				   ? CN_STATE_CHECKPOINTED
				   : cn_outcome_state_from_string(v);
		break;
	case F_STEPS: /* no key of its own: step_of above */
		break;
	case F_WORD:
		*(int *)p = words[f->arg].from_string(v);
		break;
	case F_TEXT:
	case F_RESULT:
		cn_status_text(p, f->arg, v);
		break;
	}
	return true;
}

int cn_status_parse(const char *buf, struct cn_status *s)
{
	const char *p = skip_ws(buf);
	char key[32], val[sizeof(s->message) * 6 + 3];

	cn_status_init(s, 0);
	if (*p++ != '{')
		return -EINVAL;
	for (p = skip_ws(p); *p != '}'; p = skip_ws(p)) {
		bool is_null = false, quoted = false;

		p = get_str(p, key, sizeof(key));
		if (!p)
			return -EINVAL;
		p = skip_ws(p);
		if (*p++ != ':')
			return -EINVAL;
		p = skip_ws(p);
		if (*p == '"') {
			quoted = true;
			p = get_str(p, val, sizeof(val));
			if (!p)
				return -EINVAL;
		} else {
			size_t n = strcspn(p, ",} \t\r\n");

			if (n == 0 || n >= sizeof(val))
				return -EINVAL;
			memcpy(val, p, n);
			val[n] = '\0';
			is_null = strcmp(val, "null") == 0;
			if (!is_null && strcmp(val, "true") != 0 && strcmp(val, "false") != 0 &&
			    !number_ok(val))
				return -EINVAL;
			p += n;
		}
		if (!set_field(s, key, val, is_null, quoted))
			return -EINVAL;
		p = skip_ws(p);
		if (*p == ',')
			p++;
		else if (*p != '}')
			return -EINVAL;
	}
	if (s->result == CN_RES_NONE && strcmp(s->result_name, "ok") == 0)
		s->result = CN_RES_OK; /* a file without its result's code */
	/* The signals the CLI would send: only those an INI may name (never SIGKILL). */
	if (!cn_signame_usable(s->suspend_signal) || !cn_signame_usable(s->resume_signal))
		return -EINVAL;
	return s->pid > 0 ? 0 : -EINVAL;
}

/* ---- files ---- */

int cn_status_write(const char *dir, const struct cn_status *s)
{
	char name[32], buf[CN_STATUS_MAX], why[300];
	int n = cn_status_format(s, buf, sizeof(buf)), fd, r;
	struct cn_owner o;

	if (n < 0)
		return n;
	fd = cn_safe_dir_of(dir, s->pid, &o, why, sizeof(why));
	if (fd < 0)
		return fd;
	snprintf(name, sizeof(name), "%d.json", s->pid);
	r = cn_safe_replace(fd, name, buf, (size_t)n);
	close(fd);
	return r;
}

int cn_status_read(const char *dir, int pid, struct cn_status *s)
{
	char why[300];

	return cn_status_read_why(dir, pid, s, why, sizeof(why));
}

int cn_status_read_in(int dirfd, int pid, struct cn_owner o, struct cn_status *s, struct stat *st,
		      char *why, size_t len)
{
	char name[32], buf[CN_STATUS_MAX];
	ssize_t n;

	snprintf(name, sizeof(name), "%d.json", pid);
	n = cn_safe_read_st(dirfd, name, o, buf, sizeof(buf), st, why, len);
	if (n < 0)
		return (int)n;
	n = cn_status_parse(buf, s);
	if (n < 0)
		snprintf(why, len,
			 "%s: not a status file of cudanap's, or one naming a signal it "
			 "never sends; not believed",
			 name);
	/* A file counts for the process it names only if that is the one asked for. */
	else if (s->pid != pid)
		snprintf(why, len, "%s: names process %d; not believed", name, s->pid);
	return n < 0 ? (int)n : s->pid == pid ? 0 : -ESTALE;
}

int cn_status_read_why(const char *dir, int pid, struct cn_status *s, char *why, size_t len)
{
	struct cn_owner o;
	struct stat st;
	int fd = cn_safe_dir_of(dir, pid, &o, why, len), r;
	size_t n;

	if (fd < 0)
		return fd;
	r = cn_status_read_in(fd, pid, o, s, &st, why, len);
	close(fd);
	/* The directory's name in front of what the file's check says. */
	if (r < 0 && (n = strlen(dir)) + 2 < len && why[0] != '/') {
		memmove(why + n + 1, why, len - n - 1);
		why[len - 1] = '\0';
		memcpy(why, dir, n);
		why[n] = '/';
	}
	return r;
}

void cn_status_path(const char *dir, int pid, char *out, size_t len)
{
	snprintf(out, len, "%s/%d.json", dir, pid);
}

int cn_status_remove(const char *dir, int pid)
{
	char path[4200];

	cn_status_path(dir, pid, path, sizeof(path));
	return unlink(path) < 0 ? -errno : 0;
}

int cn_status_remove_in(int dirfd, int pid, const struct stat *was)
{
	char name[32];

	snprintf(name, sizeof(name), "%d.json", pid);
	return cn_safe_unlink_same(dirfd, name, was);
}

double cn_status_since_s(const char *utc)
{
	struct tm tm;
	struct timespec now;
	const char *rest;
	double frac = 0;

	memset(&tm, 0, sizeof(tm));
	rest = utc[0] ? strptime(utc, "%Y-%m-%dT%H:%M:%S", &tm) : NULL;
	if (!rest)
		return -1;
	if (*rest == '.')
		frac = strtod(rest, NULL);
	clock_gettime(CLOCK_REALTIME, &now);
	return (double)now.tv_sec + (double)now.tv_nsec / 1e9 - ((double)timegm(&tm) + frac);
}
