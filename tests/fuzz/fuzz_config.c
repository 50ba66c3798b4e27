/* libFuzzer target: the job INI loader, and the status-file parser the CLI runs on files the
 * preload wrote, and its writer on what was parsed (written, parsed back, compared). Any input must
 * give 0 or an error with a one-line message, never a crash, a hang or an overrun. Build: CC=clang
 * meson setup build-fuzz -Dfuzz=true; run build-fuzz/tests/fuzz_config with the seeds in
 * tests/fuzz/seeds. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "cn_config.h"
#include "cn_status.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int fd = -1;
	static char path[64];
	static struct cn_config c;
	struct cn_status st;
	char err[CN_ERR_LEN], text[CN_STATUS_MAX];

	if (fd < 0) {
		fd = memfd_create("fuzz.ini", 0);
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	}
	if (ftruncate(fd, 0) < 0 || pwrite(fd, data, size, 0) != (ssize_t)size)
		return 0;
	err[0] = '\0';
	if (cn_config_load(&c, path, err, sizeof(err)) < 0 && (!err[0] || strchr(err, '\n')))
		__builtin_trap(); /* an error must come with exactly one line */

	if (size < sizeof(text)) {
		memcpy(text, data, size);
		text[size] = '\0';
		if (cn_status_parse(text, &st) == 0) {
			static char again[CN_STATUS_MAX], third[CN_STATUS_MAX];
			struct cn_status back;

			/* What parses must format back within the file's size, as one line of
			 * JSON that parses again to the same file: whatever another user wrote,
			 * the writer escapes it (root's --json), and no control character is
			 * left for a terminal. */
			if (cn_status_format(&st, again, sizeof(again)) < 0 ||
			    strchr(again, '\n') != again + strlen(again) - 1 ||
			    cn_status_parse(again, &back) != 0 ||
			    cn_status_format(&back, third, sizeof(third)) < 0 ||
			    strcmp(again, third) != 0)
				__builtin_trap();
			for (const char *c = st.command; *c; c++)
				if ((unsigned char)*c < 0x20 || *c == 0x7f)
					__builtin_trap();
		}
	}
	return 0;
}
