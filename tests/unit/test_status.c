/* Unit tests of the status file: JSON formatting and parsing, escaping, atomic writes, modes. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cn_notes.h"
#include "cn_proc.h"
#include "cn_status.h"
#include "tap.h"

static char dir[] = "/tmp/cn-unit-XXXXXX";

static void sample(struct cn_status *s)
{
	cn_status_init(s, 4711);
	s->starttime = 123456789ULL;
	snprintf(s->command, sizeof(s->command), "python3 -c \"print('a\\\\b')\"\tx\001");
	s->state = CN_STATE_CHECKPOINTED;
	s->seq = 42;
	s->restores = 7;
	snprintf(s->nccl, sizeof(s->nccl), "sockets: 2 communicators (NCCL 2.28.9)");
	snprintf(s->nccl_keys, sizeof(s->nccl_keys), "00000000000000a1,b200000000000000");
	snprintf(s->beside, sizeof(s->beside), "GPU 0 runs pid 4242, GPU 1 runs pid 4243");
	s->action = CN_ACTION_SUSPEND;
	s->result = CN_RES_OK;
	snprintf(s->message, sizeof(s->message), "line one\nline \"two\"");
	s->step_ms[CN_STEP_LOCK] = 0.412;
	s->step_ms[CN_STEP_CHECKPOINT] = 2100.5;
	s->total_ms = 2100.912;
	snprintf(s->timestamp, sizeof(s->timestamp), "2026-11-22T10:00:00.000Z");
	s->suspend_signal = 10;
	s->resume_signal = 12;
}

static void test_round_trip(void)
{
	struct cn_status a, b;
	char buf[CN_STATUS_MAX];
	int n;

	sample(&a);
	n = cn_status_format(&a, buf, sizeof(buf));
	ok(n > 0 && buf[n - 1] == '\n' && !strchr(buf, '\t') && !strchr(buf, '\001'),
	   "one line, control characters escaped");
	ok(strstr(buf, "\"lock_ms\":0.412") && strstr(buf, "\"restore_ms\":null"),
	   "steps that ran have times, the others null");
	ok(cn_status_parse(buf, &b) == 0, "parses back");
	{
		char want[sizeof(a.command)];

		snprintf(want, sizeof(want), "%s", a.command);
		for (char *c = want; *c; c++)
			*c = *c == '\t' ? ' ' : *c == '\001' ? '?' : *c;
		is_str(b.command, want,
		       "command with quotes and backslash survives, its tab a space and \\001 a "
		       "'?'");
	}
	is_str(b.message, "line one line \"two\"",
	       "message with quotes survives, its newline a space");
	ok(b.pid == 4711 && b.starttime == 123456789ULL && b.seq == 42 && !b.busy &&
		   b.restores == 7,
	   "numbers and booleans");
	is_str(b.nccl_keys, "00000000000000a1,b200000000000000", "the job's communicator keys");
	is_str(b.nccl, "sockets: 2 communicators (NCCL 2.28.9)",
	       "how its communicators are handled");
	is_str(b.beside, "GPU 0 runs pid 4242, GPU 1 runs pid 4243",
	       "the other job's processes on a restored rank's GPUs");
	ok(b.state == CN_STATE_CHECKPOINTED && b.action == CN_ACTION_SUSPEND &&
		   b.result == CN_RES_OK,
	   "state, action and result come back as numbers");
	ok(strstr(buf, "\"state\":\"checkpointed\"") && strstr(buf, "\"action\":\"suspend\"") &&
		   strstr(buf, "\"result\":\"ok\",\"result_code\":0"),
	   "and are written as words, the result with its code");
	ok(b.step_ms[CN_STEP_LOCK] > 0.41 && b.step_ms[CN_STEP_LOCK] < 0.42 &&
		   b.step_ms[CN_STEP_RESTORE] < 0 && b.total_ms > 2100,
	   "step times");
	ok(b.suspend_signal == 10 && b.resume_signal == 12, "signals");
	ok(cn_status_format(&a, buf, 40) < 0, "a too-small buffer is refused, not overrun");
}

/* What no writer of ours would write, and another user's could: control characters, quotes that
 * end a string, escape sequences for root's terminal. */
static void test_hostile_text(void)
{
	struct cn_status a, b;
	char buf[CN_STATUS_MAX];
	int n;

	sample(&a);
	/* A command line of control characters (a python -c script's newlines, say): every byte
	 * escapes to six. Found by the fuzzer: the file was then not written at all. */
	memset(a.command, '\n', sizeof(a.command) - 1);
	memset(a.message, '\001', sizeof(a.message) - 1);
	n = cn_status_format(&a, buf, sizeof(buf));
	ok(n > 0 && cn_status_parse(buf, &b) == 0 && strlen(b.command) == strlen(a.command) &&
		   strspn(b.command, " ") == strlen(a.command) &&
		   strspn(b.message, "?") == strlen(a.message),
	   "all-control-character command and message format and parse back, as spaces and '?' (%d "
	   "bytes)",
	   n);
	sample(&a);
	/* What another user's process could put in its own fields: quotes to end the string and
	 * add keys, escape sequences for root's terminal. */
	snprintf(a.timestamp, sizeof(a.timestamp), "x\",\"pid\":1,\"state\":\"checkpointed");
	snprintf(a.gpus, sizeof(a.gpus),
		 "0=\033]0;owned\007\033[31m\xc2\x9b"
		 "2J");
	snprintf(a.home_gpus, sizeof(a.home_gpus), "\"}");
	n = cn_status_format(&a, buf, sizeof(buf));
	ok(n > 0 && cn_status_parse(buf, &b) == 0 && b.pid == 4711 &&
		   b.state == CN_STATE_CHECKPOINTED && strcmp(b.timestamp, a.timestamp) == 0 &&
		   strcmp(b.home_gpus, "\"}") == 0,
	   "quotes in the timestamp and GPU fields are escaped: no key can be added");
	is_str(b.gpus, "0=?]0;owned??[31m??2J", "and escape sequences read back as '?'");
}

/* A file is believed only as a whole: its signals, its JSON, its numbers, its strings. */
static void test_believed(void)
{
	char buf[CN_STATUS_MAX];
	struct cn_status b;

	ok(cn_status_parse("{\"pid\":7,\"suspend_signal\":9}", &b) < 0 &&
		   cn_status_parse("{\"pid\":7,\"resume_signal\":15}", &b) < 0 &&
		   cn_status_parse("{\"pid\":7,\"suspend_signal\":20,\"resume_signal\":18}", &b) ==
			   0,
	   "a file naming SIGKILL or SIGTERM is refused; SIGTSTP and SIGCONT are taken");
	ok(cn_status_parse("{\"pid\":1,", &b) < 0, "truncated JSON refused");
	ok(cn_status_parse("[1]", &b) < 0, "not an object refused");
	ok(cn_status_parse("{\"pid\":7,\"future_key\":\"x\",\"state\":\"running\"}", &b) == 0 &&
		   b.state == CN_STATE_RUNNING,
	   "unknown keys are skipped");
	ok(cn_status_parse("{\"pid\":7,\"lock_ms\":nan}", &b) < 0 &&
		   cn_status_parse("{\"pid\":7,\"lock_ms\":inf}", &b) < 0 &&
		   cn_status_parse("{\"pid\":7,\"lock_ms\":-Infinity}", &b) < 0 &&
		   cn_status_parse("{\"pid\":7,\"lock_ms\":1e308}", &b) < 0 &&
		   cn_status_parse("{\"pid\":7,\"naps\":0x10}", &b) < 0 &&
		   cn_status_parse("{\"pid\":7,\"wakes\":12abc}", &b) < 0,
	   "a number that is not finite, too large or not JSON's: the file is not believed");
	ok(cn_status_parse("{\"pid\":7,\"lock_ms\":2.5e3,\"starttime\":18446744073709,"
			   "\"busy\":true,\"restore_ms\":null}",
			   &b) == 0 &&
		   b.step_ms[CN_STEP_LOCK] == 2500,
	   "finite numbers, booleans and null are taken");
	ok(cn_status_parse("{\"pid\":7,\"released_byte_s\":\"nan\"}", &b) < 0 &&
		   cn_status_parse("{\"pid\":7,\"lock_ms\":\"1e999\"}", &b) < 0 &&
		   cn_status_parse("{\"pid\":7,\"lock_ms\":\"0x1p900\"}", &b) < 0,
	   "a number of ours given as a string: the file is not believed");
	ok(cn_status_parse("{\"pid\":7,\"command\":\"a\\u00ffb\\u2603c\"}", &b) == 0 &&
		   strcmp(b.command, "a?b?c") == 0,
	   "an escape of a byte above 0x7f reads as '?': no stray byte for a JSON reader");
	ok(cn_status_parse("{\"pid\":7,\"command\":\"\xc3\xa9t\xe9\xff\xc3\"}", &b) == 0 &&
		   strcmp(b.command, "\xc3\xa9t???") == 0,
	   "UTF-8 kept, bytes that are not UTF-8 read as '?'");
	ok(cn_status_parse("{\"pid\":7,\"command\":\"k\xc0\x80l\xe0\x80\x80m\xf0\x80\x80\x80n"
			   "\xed\xa0\x80o\xed\xbf\xbfp\xf4\x90\x80\x80q\xf5\x80\x80\x80r\"}",
			   &b) == 0 &&
		   strcmp(b.command, "k??l???m????n???o???p????q????r") == 0,
	   "a strict decoder's UTF-8: overlongs, surrogates, code points above U+10FFFF as '?'");
	ok(cn_status_parse("{\"pid\":7,\"command\":\"\xe0\xa0\x80\xed\x9f\xbf\xee\x80\x80"
			   "\xf0\x90\x80\x80\xf4\x8f\xbf\xbf\"}",
			   &b) == 0 &&
		   strcmp(b.command, "\xe0\xa0\x80\xed\x9f\xbf\xee\x80\x80\xf0\x90\x80\x80"
				     "\xf4\x8f\xbf\xbf") == 0,
	   "and the characters at the edges of those ranges kept (U+0800, U+D7FF, U+E000, "
	   "U+10000, U+10FFFF)");
	ok(cn_status_parse("{\"pid\":7,\"naps\":-1}", &b) < 0 &&
		   cn_status_parse("{\"pid\":7,\"starttime\":-1}", &b) < 0 &&
		   cn_status_parse("{\"pid\":7,\"seq\":1.5}", &b) < 0 &&
		   cn_status_parse("{\"pid\":7,\"query_seq\":1e3}", &b) < 0 &&
		   cn_status_parse("{\"pid\":2147483648}", &b) < 0 &&
		   cn_status_parse("{\"pid\":\"7\"}", &b) < 0 &&
		   cn_status_parse("{\"pid\":7,\"busy\":1}", &b) < 0 &&
		   cn_status_parse("{\"pid\":7,\"busy\":\"true\"}", &b) < 0,
	   "an integer that is none of its field's type (-1 unsigned, a fraction, an exponent, "
	   "out of range, a string), a boolean not true or false: the file is not believed");
	ok(cn_status_parse("{\"pid\":7,\"nap_for_pid\":-3,\"starttime\":17999999999999999999,"
			   "\"naps\":0}",
			   &b) == 0 &&
		   b.nap_for_pid == -3 && b.starttime == 17999999999999999999ULL,
	   "and integers in range are taken");
	b.step_ms[CN_STEP_LOCK] = 1.0 / 0.0;
	b.step_ms[CN_STEP_CHECKPOINT] = 0.0 / 0.0;
	ok(cn_status_format(&b, buf, sizeof(buf)) > 0 && !strstr(buf, "inf") &&
		   !strstr(buf, "nan") && strstr(buf, "\"lock_ms\":null") &&
		   cn_status_parse(buf, &b) == 0,
	   "and what is written is JSON whatever the numbers held: null for one not finite");
}

/* The words of the typed fields are made here and nowhere else: each value and its word, both
 * ways; a driver's result keeps its name; a file's words that are none of ours read as unknown, and
 * its result is its code, whatever its words say. */
static void test_words(void)
{
	struct cn_status a, b;
	char buf[CN_STATUS_MAX];
	bool all = true;

	for (int st = CN_STATE_RUNNING; st <= CN_STATE_NO_CUDA; st++)
		all &= cn_outcome_state_from_string(cn_outcome_state_to_string(st)) == st;
	for (int ac = CN_ACTION_START; ac <= CN_ACTION_WAKE; ac++)
		all &= cn_outcome_action_from_string(cn_outcome_action_to_string(ac)) == ac;
	for (int nap = CN_NAP_OFF; nap <= CN_NAP_BESIDE; nap++)
		all &= cn_outcome_nap_from_string(cn_outcome_nap_to_string(nap)) == nap;
	for (int ask = CN_ASK_YES; ask <= CN_ASK_ASLEEP; ask++)
		all &= cn_outcome_ask_from_string(cn_outcome_ask_to_string(ask)) == ask;
	ok(all, "every state, action, nap and answer has a word, and the word its value");
	is_str(cn_outcome_nap_to_string(CN_NAP_WAITING), "waiting for room", "a nap's word");
	is_str(cn_outcome_result_name(CN_RES_NO_ROOM), "NO_GPU_MEMORY", "a result of ours named");
	ok(cn_outcome_result_name(801) == NULL, "a CUDA result the driver names is not named here");

	sample(&a);
	a.action = CN_ACTION_WAKE;
	a.result = 801;
	snprintf(a.result_name, sizeof(a.result_name), "CUDA_ERROR_NOT_SUPPORTED");
	a.nap = CN_NAP_WAITING;
	a.suspendable = CN_ASK_NO_CUDA;
	ok(cn_status_format(&a, buf, sizeof(buf)) > 0 && cn_status_parse(buf, &b) == 0 &&
		   b.action == CN_ACTION_WAKE && b.result == 801 && b.nap == CN_NAP_WAITING &&
		   b.suspendable == CN_ASK_NO_CUDA,
	   "wake, a driver's result, waiting for room and no-cuda round-trip");
	is_str(cn_status_result(&b), "CUDA_ERROR_NOT_SUPPORTED", "the driver's name kept");
	ok(strstr(buf, "\"state\":\"napping\"") && b.state == CN_STATE_CHECKPOINTED,
	   "checkpointed, its wake waiting: the word napping, read back as checkpointed");
	a.nap = CN_NAP_AWAKE;
	a.action = CN_ACTION_NAP;
	is_str(cn_status_state(&a), "napping", "the nap that checkpointed it just ended: napping");
	a.action = CN_ACTION_SUSPEND;
	is_str(cn_status_state(&a), "checkpointed", "suspended: checkpointed");
	a.state = CN_STATE_RUNNING;
	a.action = CN_ACTION_NAP;
	is_str(cn_status_state(&a), "running", "a nap that failed: running");
	a.state = CN_STATE_CHECKPOINTED;
	a.action = CN_ACTION_WAKE;
	a.busy = true;
	a.result = CN_RES_NONE;
	ok(cn_status_format(&a, buf, sizeof(buf)) > 0 && strstr(buf, "\"result\":\"\","),
	   "no result while the action runs");
	ok(cn_status_parse("{\"pid\":7,\"state\":\"pid 1\",\"action\":\"\\u001b]0;x\","
			   "\"result\":\"ok\",\"result_code\":600,\"nap\":\"sleepy\"}",
			   &b) == 0 &&
		   b.state == CN_STATE_UNKNOWN && b.action == CN_ACTION_UNKNOWN &&
		   b.result == 600 && b.nap == CN_NAP_UNSAID,
	   "a file's strange words read as unknown; its result is its code");
	ok(cn_status_format(&b, buf, sizeof(buf)) > 0 && strstr(buf, "\"state\":\"\",") &&
		   strstr(buf, "\"action\":\"\",") &&
		   strstr(buf, "\"result\":\"CUDA_ERROR_NOT_READY\",\"result_code\":600"),
	   "and are written again as ours, never as they came");
	ok(cn_status_parse("{\"pid\":7,\"result\":\"ok\"}", &b) == 0 && b.result == CN_RES_OK,
	   "a file without the result's code: ok is ok");
}

static void test_files(void)
{
	struct cn_status a, b;
	char path[300], tmp[300];
	struct stat st;

	sample(&a);
	a.pid = (int)getpid(); /* root reads the status of a live process only */
	ok(cn_status_write(dir, &a) == 0, "write");
	snprintf(path, sizeof(path), "%s/%d.json", dir, a.pid);
	ok(stat(path, &st) == 0 && (st.st_mode & 0777) == 0600, "file is 0600");
	snprintf(tmp, sizeof(tmp), "%s/.%d.json.tmp", dir, a.pid);
	ok(access(tmp, F_OK) < 0, "no temp file left behind");
	ok(cn_status_read(dir, a.pid, &b) == 0 && b.seq == 42, "read back");
	if (symlink("/tmp/cn-unit-elsewhere", tmp) < 0)
		perror("symlink");
	ok(cn_status_write(dir, &a) == 0 && access("/tmp/cn-unit-elsewhere", F_OK) < 0 &&
		   access(tmp, F_OK) < 0,
	   "a symlink planted at the temp name is not followed: removed, the file made anew");
	if (mkfifo(tmp, 0600) < 0)
		perror("mkfifo");
	ok(cn_status_write(dir, &a) == 0 && access(tmp, F_OK) < 0,
	   "nor a FIFO waited on: written at once");
	unlink(tmp);
	unlink(path);
	if (symlink("/etc/hostname", path) < 0)
		perror("symlink");
	ok(cn_status_read(dir, a.pid, &b) < 0, "a symlinked status file is not read");
	ok(cn_status_write(dir, &a) == 0 && lstat(path, &st) == 0 && S_ISREG(st.st_mode),
	   "writing replaces a planted symlink instead of writing through it");
	ok(cn_status_remove(dir, a.pid) == 0 && access(path, F_OK) < 0, "remove");
	ok(cn_proc_starttime(getpid()) > 0, "own start time readable");
	ok(cn_proc_starttime(0x7ffffff0) == 0, "a missing pid has no start time");
}

/* The steps line: the steps that ran, and the rest of the action's time when it is 50 ms or more.
 */
static void test_steps(void)
{
	struct cn_status s;
	char buf[200];

	cn_status_init(&s, 1);
	s.step_ms[CN_STEP_LOCK] = 0.25;
	s.step_ms[CN_STEP_CHECKPOINT] = 2380;
	s.step_ms[CN_STEP_HIBERNATE] = 403.1;
	s.total_ms = 2783.35 + 49.9;
	cn_status_steps(&s, buf, sizeof(buf));
	is_str(buf, "lock 0.2 ms, checkpoint 2.38 s, hibernate 403.1 ms",
	       "steps, the rest under 50 ms left out");
	s.total_ms = 4460;
	cn_status_steps(&s, buf, sizeof(buf));
	is_str(buf, "lock 0.2 ms, checkpoint 2.38 s, hibernate 403.1 ms, other 1.68 s",
	       "the rest of a long action said");
	cn_status_init(&s, 1);
	s.total_ms = 500;
	ok(cn_status_steps(&s, buf, sizeof(buf)) == 0 && !buf[0],
	   "no steps: nothing, not the rest alone");
}

/* Notes beside the status file: put replaces whole, take reads whole and removes. */
static void test_notes(void)
{
	char buf[64], path[300], small[4];

	ok(cn_notes_take(dir, 7, "gpu-map", buf, sizeof(buf)) == -ENOENT, "no note: -ENOENT");
	ok(cn_notes_put(dir, 7, "gpu-map", "0=1, 1=0\n") == 0, "a note put");
	ok(cn_notes_put(dir, 7, "gpu-map", "1=0\nsecond line\n") == 0, "and replaced");
	cn_notes_path(dir, 7, "gpu-map", path, sizeof(path));
	ok(access(path, F_OK) == 0, "as <dir>/<pid>.<what>");
	ok(cn_notes_take(dir, 7, "gpu-map", buf, sizeof(buf)) == 16 &&
		   strcmp(buf, "1=0\nsecond line\n") == 0,
	   "taken whole, the last one put");
	ok(access(path, F_OK) < 0, "and removed");
	ok(cn_notes_put(dir, 7, "empty", "") == 0 &&
		   cn_notes_take(dir, 7, "empty", buf, sizeof(buf)) == 0 && !buf[0],
	   "an empty note is there, and empty");
	cn_notes_put(dir, 7, "long", "0123456789");
	ok(cn_notes_take(dir, 7, "long", small, sizeof(small)) == 3 && strcmp(small, "012") == 0,
	   "a note longer than the buffer is cut, NUL-terminated");
	ok(cn_notes_put("/nonexistent-dir", 7, "x", "y") == -ENOENT, "a missing dir: -ENOENT");
}

/* The counts and histograms kept across actions: counted, written, read back; and what a file
 * another process wrote may not put in them (control characters, huge or broken numbers). */
static void test_counts(void)
{
	struct cn_status a, b;
	char buf[CN_STATUS_MAX];
	const struct cn_count *e;

	sample(&a);
	cn_counts_add(&a.counts, CN_ACTION_SUSPEND, "ok");
	cn_counts_add(&a.counts, CN_ACTION_SUSPEND, "ok");
	cn_counts_add(&a.counts, CN_ACTION_SUSPEND, "CUDA_ERROR_NOT_READY");
	cn_counts_add(&a.counts, CN_ACTION_WAKE, "bad\033]0;name");
	cn_counts_observe(&a.counts.suspend, 0.3);
	cn_counts_observe(&a.counts.suspend, 0.5);
	cn_counts_observe(&a.counts.suspend, 400);
	cn_counts_observe(&a.counts.wake, -1);
	ok(cn_status_format(&a, buf, sizeof(buf)) > 0 &&
		   strstr(buf, "\"actions\":\"suspend ok 2,suspend CUDA_ERROR_NOT_READY 1,wake "
			       "OTHER 1\",\"suspend_buckets\":\"0,0,2,0,0,0,0,0,0,0,0,1\","
			       "\"suspend_sum_s\":400.800,\"resume_buckets\":\"0,0,0,0,0,0,0,0,0,0,"
			       "0,0\""),
	   "counts by action and result (a result that is no name is OTHER), buckets up to 0.5 s "
	   "and "
	   "above 120 s, the sum");
	ok(cn_status_parse(buf, &b) == 0 && b.counts.n_by == 3 && b.counts.by[1].n == 1 &&
		   strcmp(b.counts.by[1].result, "CUDA_ERROR_NOT_READY") == 0 &&
		   b.counts.suspend.n[2] == 2 && b.counts.suspend.n[11] == 1 &&
		   b.counts.suspend.sum_s > 400.7 && b.counts.wake.n[0] == 0 &&
		   b.counts.wake.sum_s == 0,
	   "and read back; a negative duration was not counted");
	for (int i = 0; i < 40; i++) {
		snprintf(buf, sizeof(buf), "CUDA_ERROR_%d", i);
		cn_counts_add(&a.counts, CN_ACTION_RESUME, buf);
	}
	e = &a.counts.by[CN_COUNTS_MAX - 1];
	ok(a.counts.n_by == CN_COUNTS_MAX && e->action == CN_ACTION_RESUME &&
		   strcmp(e->result, "OTHER") == 0 && e->n == 40 - (CN_COUNTS_MAX - 1 - 3),
	   "more results than it keeps: the rest counted as OTHER (%llu)", e->n);
	ok(cn_status_parse(
		   "{\"pid\":7,\"actions\":\"suspend ok 5,nap ok 99999999999999999999,"
		   "teleport ok 1,wake ok -1,resume ok 2 3,resume \\u001b 1,resume ok 4\","
		   "\"suspend_buckets\":\"1,2,3\",\"resume_buckets\":\"1,1,1,1,1,1,1,1,1,1,1,1,1\","
		   "\"wake_buckets\":\"1,0,0,0,0,0,0,0,0,0,0,x\",\"suspend_sum_s\":\"nan\","
		   "\"resume_sum_s\":1e18,\"wake_sum_s\":-3}",
		   &b) == 0 &&
		   b.counts.n_by == 2 && b.counts.by[0].n == 5 &&
		   b.counts.by[1].action == CN_ACTION_RESUME && b.counts.by[1].n == 4 &&
		   b.counts.suspend.n[0] == 0 && b.counts.resume.n[0] == 0 &&
		   b.counts.wake.n[0] == 0 && b.counts.suspend.sum_s == 0 &&
		   b.counts.resume.sum_s == 0 && b.counts.wake.sum_s == 0,
	   "a file's broken counts are left out: huge, negative, unknown actions, results that are "
	   "no "
	   "name, buckets too few, too many or not numbers, sums not finite or below 0");
	ok(cn_status_parse("{\"pid\":7,\"suspend_sum_s\":nan}", &b) < 0 &&
		   cn_status_parse("{\"pid\":7,\"resume_sum_s\":1e400}", &b) < 0,
	   "a sum that is no JSON number, or too large for one: the file is not believed");
}

int main(void)
{
	char cmd[300];

	if (!mkdtemp(dir))
		return 1;
	test_round_trip();
	test_hostile_text();
	test_believed();
	test_words();
	test_files();
	test_steps();
	test_notes();
	test_counts();
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		return 1;
	return tap_done();
}
