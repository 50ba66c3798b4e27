/* check: cudanap check-config, which validates an INI without running anything. */
#include <stdio.h>

#include "cli.h"
#include "cn_dirs.h"

const char cli_usage_check[] =
	"usage: cudanap check-config FILE\n"
	"\n"
	"Parse and validate FILE as a job INI. Prints 'FILE: ok' and exits 0, or prints\n"
	"'FILE:LINE: section.key: reason' and exits 78.\n";

int check_main(int argc, char **argv)
{
	char err[CN_ERR_LEN];
	struct cn_config c;

	if (argc != 2 || argv[1][0] == '-') {
		fprintf(stderr,
			"%s check-config: give one INI file; see '%s check-config --help'\n",
			cli_prog, cli_prog);
		return 2;
	}
	cli_load_config(argv[1], &c);
	/* The status dir is checked by each process's preload at its start: say now what it will.
	 */
	if (cn_dirs_status_check(c.status_dir, err, sizeof(err)) < 0) {
		fprintf(stderr, "%s: %s: %s\n", cli_prog, argv[1], err);
		return 78;
	}
	printf("%s: ok\n", argv[1]);
	return 0;
}
