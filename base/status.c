/* status: format, parse and atomically replace the status file (see cn_status.h). */
#define _GNU_SOURCE
#include "cn_status.h"

#include <ctype.h>
#include <signal.h>
#include <stddef.h>
#include <errno.h>
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

/* The numbers that may be null (< 0 in the struct), in the order the file lists them. */
#define NUM(field)                                                                                 \
	{                                                                                          \
#field, offsetof(struct cn_status, field)                                          \
	}
static const struct {
	const char *key;
	size_t off;
} nums[] = {
#define STEP(name, step)                                                                           \
	{                                                                                          \
		name, offsetof(struct cn_status, step_ms) + (step) * sizeof(double)                \
	}
	STEP("prepare_ms", CN_STEP_PREPARE),
	STEP("lock_ms", CN_STEP_LOCK),
	STEP("checkpoint_ms", CN_STEP_CHECKPOINT),
	STEP("hibernate_ms", CN_STEP_HIBERNATE),
	STEP("readback_ms", CN_STEP_READBACK),
	STEP("wait_ms", CN_STEP_WAIT),
	STEP("restore_ms", CN_STEP_RESTORE),
	STEP("unlock_ms", CN_STEP_UNLOCK),
#undef STEP
	NUM(total_ms),
	NUM(staged_mib),
	NUM(prefault_ms),
	NUM(unmap_ms),
	NUM(copy_mib),
	NUM(copy_ms),
	NUM(footprint_mib),
	NUM(reserve_ms),
	NUM(host_mib),
	NUM(disk_mib),
};
#undef NUM
#define N_NUMS (sizeof(nums) / sizeof(nums[0]))

static double *num(const struct cn_status *s, size_t i)
{
	return (double *)((char *)s + nums[i].off);
}

/* The query's and the naps' fields (cn_status.h), kept across actions: strings, then numbers
 * (< 0: null). */
#define FIELD(field)                                                                               \
	{                                                                                          \
#field, offsetof(struct cn_status, field), sizeof(((struct cn_status *)0)->field)  \
	}
/* A string, or a word of an enum (cn_outcome.h) among them: its value's word, and back (kind
 * -1: a string). */
#define TEXT(field)                                                                                \
	{                                                                                          \
#field, offsetof(struct cn_status, field), sizeof(((struct cn_status *)0)->field), \
			-1                                                                         \
	}
#define WORD(field, kind)                                                                          \
	{                                                                                          \
#field, offsetof(struct cn_status, field), 0, kind                                 \
	}
static const struct {
	const char *key;
	size_t off, len;
	int kind;
} qstrs[] = {
	TEXT(query_time),
	WORD(suspendable, CN_OUTCOME_ASK),
	TEXT(why_not),
	TEXT(gpu_now),
	TEXT(gpu_model),
	TEXT(host_bound),
	TEXT(est_source),
	TEXT(inside),
	TEXT(peer),
	TEXT(beside),
	WORD(nap, CN_OUTCOME_NAP),
	TEXT(nap_why),
	TEXT(nap_depth),
	TEXT(idle_since),
	TEXT(released_gpus),
};
#undef TEXT
#undef WORD
static const struct {
	const char *key;
	size_t off, len;
} qnums[] = {
	FIELD(gpu_now_mib),  FIELD(host_need_mib), FIELD(host_room_mib),  FIELD(est_suspend_s),
	FIELD(est_resume_s), FIELD(last_wake_ms),  FIELD(released_since), FIELD(released_byte_s),
	FIELD(nap_for_mib),  FIELD(light_mib),	   FIELD(light_ms),	  FIELD(light_able_mib),
};
#undef FIELD
#define N_QSTRS (sizeof(qstrs) / sizeof(qstrs[0]))
#define N_QNUMS (sizeof(qnums) / sizeof(qnums[0]))

const char *const cn_step_names[CN_STEPS] = { "prepare_ms",   "lock_ms",     "checkpoint_ms",
					      "hibernate_ms", "readback_ms", "wait_ms",
					      "restore_ms",   "unlock_ms" };

/* The rest of an action's time beyond its steps is said when it is this large. */
#define OTHER_MS 50.0

size_t cn_status_steps(const struct cn_status *s, char *buf, size_t len)
{
	double sum = 0;
	size_t o = 0;

	buf[0] = '\0';
	for (int i = 0; i <= CN_STEPS && o < len; i++) {
		double ms = i < CN_STEPS ? s->step_ms[i] : s->total_ms - sum;
		const char *name = i < CN_STEPS ? cn_step_names[i] : "other_ms";

		if (ms < 0 || (i == CN_STEPS && (!o || ms < OTHER_MS)))
			continue;
		sum += ms;
		o += (size_t)snprintf(buf + o, len - o, "%s%.*s ", o ? ", " : "",
				      (int)strcspn(name, "_"), name);
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
	for (size_t i = 0; i < N_NUMS; i++)
		*num(s, i) = -1;
	s->call_ns = 0;
}

void cn_status_init(struct cn_status *s, int pid)
{
	memset(s, 0, sizeof(*s));
	s->pid = pid;
	s->state = CN_STATE_UNKNOWN;
	s->suspend_signal = SIGUSR1;
	s->resume_signal = SIGUSR2;
	cn_status_new_action(s, CN_ACTION_START);
	s->busy = false;
	for (size_t i = 0; i < N_QNUMS; i++)
		*(double *)((char *)s + qnums[i].off) = -1;
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
	return s->state == CN_STATE_RUNNING && strcmp(s->nap_depth, "light") == 0 &&
	       s->light_mib > 0;
}

const char *cn_status_state(const struct cn_status *s)
{
	/* Asleep by a nap: its nap says so, or the nap that checkpointed it just ended (its nap
	 * state is written right after). */
	bool napping = (s->state == CN_STATE_CHECKPOINTED &&
			(cn_outcome_nap_asleep(s->nap) || s->action == CN_ACTION_NAP)) ||
		       cn_status_light_held(s);

	return cn_outcome_word(CN_OUTCOME_STATE, napping ? CN_STATE_NAPPING : s->state);
}

const char *cn_status_result(const struct cn_status *s)
{
	const char *name = cn_outcome_result_name(s->result);

	if (name)
		return name;
	return s->result > 0 && cuda_name(s->result_name) ? s->result_name : "CUDA_ERROR_UNKNOWN";
}

int cn_status_format(const struct cn_status *s, char *buf, size_t len)
{
	/* Six bytes per character in the worst case (\u00XX), plus the quotes. */
	char cmd[sizeof(s->command) * 6 + 3], msg[sizeof(s->message) * 6 + 3],
		nccl[sizeof(s->nccl) * 6 + 3], keys[sizeof(s->nccl_keys) * 6 + 3],
		res[sizeof(s->result_name) * 6 + 3], ts[sizeof(s->timestamp) * 6 + 3],
		gpus[3][sizeof(s->gpus) * 6 + 3];
	size_t o;
	int n;

	if (cn_json_str(cmd, sizeof(cmd), s->command) < 0 ||
	    cn_json_str(msg, sizeof(msg), s->message) < 0 ||
	    cn_json_str(res, sizeof(res), cn_status_result(s)) < 0)
		return -ENOSPC;
	n = snprintf(
		buf, len,
		"{\"pid\":%d,\"starttime\":%llu,\"command\":%s,\"state\":\"%s\",\"busy\":%s,"
		"\"seq\":%lu,\"action\":\"%s\",\"result\":%s,\"result_code\":%d,\"message\":%s",
		s->pid, s->starttime, cmd, cn_status_state(s), s->busy ? "true" : "false", s->seq,
		cn_outcome_word(CN_OUTCOME_ACTION, s->action), res, s->result, msg);
	if (n < 0 || (size_t)n >= len)
		return -ENOSPC;
	o = (size_t)n;
	for (size_t i = 0; i < N_NUMS; i++) {
		double v = *num(s, i);

		if (v < 0 || !isfinite(v) || v > CN_STATUS_NUM_MAX)
			n = snprintf(buf + o, len - o, ",\"%s\":null", nums[i].key);
		else
			n = snprintf(buf + o, len - o, ",\"%s\":%.3f", nums[i].key, v);
		if (n < 0 || (size_t)n >= len - o)
			return -ENOSPC;
		o += (size_t)n;
	}
	/* Every string escaped, whoever wrote it: a file another user made is formatted again by
	 * the CLI's --json. */
	if (cn_json_str(nccl, sizeof(nccl), s->nccl) < 0 ||
	    cn_json_str(keys, sizeof(keys), s->nccl_keys) < 0 ||
	    cn_json_str(ts, sizeof(ts), s->timestamp) < 0 ||
	    cn_json_str(gpus[0], sizeof(gpus[0]), s->gpus) < 0 ||
	    cn_json_str(gpus[1], sizeof(gpus[1]), s->home_gpus) < 0 ||
	    cn_json_str(gpus[2], sizeof(gpus[2]), s->restore_gpus) < 0)
		return -ENOSPC;
	n = snprintf(buf + o, len - o,
		     ",\"call_ns\":%llu,\"timestamp\":%s,\"suspend_signal\":%d,"
		     "\"resume_signal\":%d,\"prepared\":%s,\"gpus\":%s,\"home_gpus\":%s,"
		     "\"restore_gpus\":%s,\"nccl\":%s,\"nccl_keys\":%s,\"query_seq\":%lu,"
		     "\"naps\":%lu,\"wakes\":%lu,\"naps_idle\":%lu,\"naps_asked\":%lu,"
		     "\"naps_room\":%lu,\"nap_for_pid\":%d,\"rooms_made\":%lu,\"restores\":%lu",
		     s->call_ns, ts, s->suspend_signal, s->resume_signal,
		     s->prepared ? "true" : "false", gpus[0], gpus[1], gpus[2], nccl, keys,
		     s->query_seq, s->naps, s->wakes, s->naps_idle, s->naps_asked, s->naps_room,
		     s->nap_for_pid, s->rooms_made, s->restores);
	if (n < 0 || (size_t)n >= len - o)
		return -ENOSPC;
	o += (size_t)n;
	for (size_t i = 0; i < N_QSTRS; i++) {
		char v[sizeof(s->why_not) * 6 + 3];
		const char *text =
			qstrs[i].kind >= 0
				? cn_outcome_word(qstrs[i].kind,
						  *(const int *)((const char *)s + qstrs[i].off))
				: (const char *)s + qstrs[i].off;

		if (cn_json_str(v, sizeof(v), text) < 0)
			return -ENOSPC;
		n = snprintf(buf + o, len - o, ",\"%s\":%s", qstrs[i].key, v);
		if (n < 0 || (size_t)n >= len - o)
			return -ENOSPC;
		o += (size_t)n;
	}
	for (size_t i = 0; i < N_QNUMS; i++) {
		double v = *(const double *)((const char *)s + qnums[i].off);

		n = v < 0 || !isfinite(v) || v > CN_STATUS_NUM_MAX
			    ? snprintf(buf + o, len - o, ",\"%s\":null", qnums[i].key)
			    : snprintf(buf + o, len - o, ",\"%s\":%.3f", qnums[i].key, v);
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
 * none (a stray continuation byte, an overlong or cut one). */
static size_t utf8_len(const char *p, size_t n)
{
	const unsigned char *u = (const unsigned char *)p;
	size_t len = u[0] < 0x80	     ? 1
		     : (u[0] & 0xe0) == 0xc0 ? 2
		     : (u[0] & 0xf0) == 0xe0 ? 3
		     : (u[0] & 0xf8) == 0xf0 ? 4
					     : 0;

	if (!len || len > n || (len == 2 && u[0] < 0xc2) || (len == 4 && u[0] > 0xf4))
		return 0;
	for (size_t i = 1; i < len; i++)
		if ((u[i] & 0xc0) != 0x80)
			return 0;
	return len;
}

/* Truncating copy: a too-long field from an edited file must not break the reader. Control
 * characters become a space (tab, newline, return) or '?': what a reader prints goes to a terminal,
 * and a file another user wrote could otherwise set its colours or title (C0, DEL, C1 as UTF-8, and
 * a lone 8-bit CSI). */
static void copy_field(char *dst, size_t len, const char *v)
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

/* One key's value into s; false when the file is not to be believed for it: a number of ours
 * given as a string, or as one not finite and bounded (number_ok). */
static bool set_field(struct cn_status *s, const char *key, const char *v, bool is_null,
		      bool quoted)
{
	if (strcmp(key, "pid") == 0)
		s->pid = atoi(v);
	else if (strcmp(key, "starttime") == 0)
		s->starttime = strtoull(v, NULL, 10);
	else if (strcmp(key, "command") == 0)
		copy_field(s->command, sizeof(s->command), v);
	else if (strcmp(key, "state") == 0)
		s->state = cn_outcome_of(CN_OUTCOME_STATE, v) == CN_STATE_NAPPING
				   ? CN_STATE_CHECKPOINTED
				   : cn_outcome_of(CN_OUTCOME_STATE, v);
	else if (strcmp(key, "busy") == 0)
		s->busy = strcmp(v, "true") == 0;
	else if (strcmp(key, "prepared") == 0)
		s->prepared = strcmp(v, "true") == 0;
	else if (strcmp(key, "seq") == 0)
		s->seq = strtoul(v, NULL, 10);
	else if (strcmp(key, "action") == 0)
		s->action = cn_outcome_of(CN_OUTCOME_ACTION, v);
	else if (strcmp(key, "result") == 0)
		copy_field(s->result_name, sizeof(s->result_name), v);
	else if (strcmp(key, "result_code") == 0)
		s->result = atoi(v);
	else if (strcmp(key, "message") == 0)
		copy_field(s->message, sizeof(s->message), v);
	else if (strcmp(key, "call_ns") == 0)
		s->call_ns = strtoull(v, NULL, 10);
	else if (strcmp(key, "timestamp") == 0)
		copy_field(s->timestamp, sizeof(s->timestamp), v);
	else if (strcmp(key, "suspend_signal") == 0)
		s->suspend_signal = atoi(v);
	else if (strcmp(key, "resume_signal") == 0)
		s->resume_signal = atoi(v);
	else if (strcmp(key, "gpus") == 0)
		copy_field(s->gpus, sizeof(s->gpus), v);
	else if (strcmp(key, "home_gpus") == 0)
		copy_field(s->home_gpus, sizeof(s->home_gpus), v);
	else if (strcmp(key, "restore_gpus") == 0)
		copy_field(s->restore_gpus, sizeof(s->restore_gpus), v);
	else if (strcmp(key, "nccl") == 0)
		copy_field(s->nccl, sizeof(s->nccl), v);
	else if (strcmp(key, "nccl_keys") == 0)
		copy_field(s->nccl_keys, sizeof(s->nccl_keys), v);
	else if (strcmp(key, "query_seq") == 0)
		s->query_seq = strtoul(v, NULL, 10);
	else if (strcmp(key, "naps") == 0)
		s->naps = strtoul(v, NULL, 10);
	else if (strcmp(key, "wakes") == 0)
		s->wakes = strtoul(v, NULL, 10);
	else if (strcmp(key, "naps_idle") == 0)
		s->naps_idle = strtoul(v, NULL, 10);
	else if (strcmp(key, "naps_asked") == 0)
		s->naps_asked = strtoul(v, NULL, 10);
	else if (strcmp(key, "naps_room") == 0)
		s->naps_room = strtoul(v, NULL, 10);
	else if (strcmp(key, "nap_for_pid") == 0)
		s->nap_for_pid = atoi(v);
	else if (strcmp(key, "restores") == 0)
		s->restores = strtoul(v, NULL, 10);
	else if (strcmp(key, "rooms_made") == 0)
		s->rooms_made = strtoul(v, NULL, 10);
	for (size_t i = 0; i < N_NUMS; i++)
		if (strcmp(key, nums[i].key) == 0) {
			if (!is_null && (quoted || !number_ok(v)))
				return false;
			*num(s, i) = is_null ? -1 : strtod(v, NULL);
		}
	for (size_t i = 0; i < N_QSTRS; i++)
		if (strcmp(key, qstrs[i].key) == 0 && qstrs[i].kind >= 0)
			*(int *)((char *)s + qstrs[i].off) = cn_outcome_of(qstrs[i].kind, v);
		else if (strcmp(key, qstrs[i].key) == 0)
			copy_field((char *)s + qstrs[i].off, qstrs[i].len, v);
	for (size_t i = 0; i < N_QNUMS; i++)
		if (strcmp(key, qnums[i].key) == 0) {
			if (!is_null && (quoted || !number_ok(v)))
				return false;
			*(double *)((char *)s + qnums[i].off) = is_null ? -1 : strtod(v, NULL);
		}
	cn_counts_field(&s->counts, key, v); /* its own checks: left out when not well formed */
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
