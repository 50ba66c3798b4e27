/* promjson: cudanap metrics --json, the same samples as metrics prints, read back from its
 * Prometheus text and written as one JSON object (docs/FILES.md). */
#define _GNU_SOURCE
#include <ctype.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

const char cli_usage_metrics_json[] =
	"\n"
	"  -j, --json            print one JSON object instead: {\"metrics\": [{\"name\", "
	"\"type\",\n"
	"                        \"help\", \"samples\": [{\"name\", \"labels\", \"value\"}, ...]}, "
	"...]},\n"
	"                        the text's samples (a value that is not finite: null)\n";

/* The JSON being written, and the family it is in. */
struct out {
	FILE *f;
	bool any_family;
	char name[256]; /* the family's, from its # HELP or # TYPE line, or its first sample's */
	char type[32];
	char *help;
	bool open, any_sample;
};

/* A label value or HELP text as the text format escapes it (\\, \", \n), into a plain string. */
static void unescape(const char *s, size_t n, char *out, size_t len)
{
	size_t o = 0;

	for (size_t i = 0; i < n && o + 1 < len; i++) {
		if (s[i] == '\\' && i + 1 < n) {
			i++;
			out[o++] = s[i] == 'n' ? '\n' : s[i];
		} else {
			out[o++] = s[i];
		}
	}
	out[o] = '\0';
}

/* The family's object opened, at its first sample or its end. */
static void open_family(struct out *o)
{
	if (o->open)
		return;
	fprintf(o->f, "%s{\"name\":", o->any_family ? "," : "");
	o->any_family = true;
	cli_print_json_str(o->f, o->name);
	fprintf(o->f, ",\"type\":");
	cli_print_json_str(o->f, o->type[0] ? o->type : "untyped");
	fprintf(o->f, ",\"help\":");
	cli_print_json_str(o->f, o->help ? o->help : "");
	fprintf(o->f, ",\"samples\":[");
	o->open = true;
	o->any_sample = false;
}

/* The family's object closed (one declared by # HELP or # TYPE and without samples listed with
 * none, as the text declares it), and a new one named (its type and help to come). */
static void next_family(struct out *o, const char *name)
{
	if (!o->open && o->name[0] && (o->type[0] || o->help))
		open_family(o);
	if (o->open)
		fprintf(o->f, "]}");
	o->open = false;
	snprintf(o->name, sizeof(o->name), "%s", name);
	o->type[0] = '\0';
	free(o->help);
	o->help = NULL;
}

/* Whether a sample called name is of family fam: its own name, or a histogram's or summary's
 * series of it. */
static bool of_family(const char *fam, const char *name)
{
	static const char *const tails[] = { "", "_bucket", "_sum", "_count" };
	size_t n = strlen(fam);

	if (!fam[0] || strncmp(fam, name, n) != 0)
		return false;
	for (size_t i = 0; i < sizeof(tails) / sizeof(tails[0]); i++)
		if (strcmp(name + n, tails[i]) == 0)
			return true;
	return false;
}

/* {a="x",b="y"}: the labels as a JSON object; s points after the '{'. What follows, or NULL. */
static const char *labels(struct out *o, const char *s)
{
	char name[256], value[4096];
	bool first = true;

	fprintf(o->f, "{");
	while (*s && *s != '}') {
		size_t n = strcspn(s, "=");
		const char *v;

		snprintf(name, sizeof(name), "%.*s", (int)n, s);
		if (s[n] != '=' || s[n + 1] != '"')
			return NULL;
		v = s + n + 2;
		for (s = v; *s && *s != '"'; s++)
			if (*s == '\\' && s[1])
				s++;
		if (*s != '"')
			return NULL;
		unescape(v, (size_t)(s - v), value, sizeof(value));
		fprintf(o->f, "%s", first ? "" : ",");
		first = false;
		cli_print_json_str(o->f, name);
		fprintf(o->f, ":");
		cli_print_json_str(o->f, value);
		if (*++s == ',')
			s++;
	}
	fprintf(o->f, "}");
	return *s == '}' ? s + 1 : NULL;
}

/* A value as JSON: its own text when that is a JSON number, else the number it reads as, null
 * when that is not finite (NaN, +Inf). */
static void value(struct out *o, const char *s)
{
	size_t n;
	double v;
	char *end;

	s += strspn(s, " ");
	n = strcspn(s, " ");
	v = strtod(s, &end);
	if (end != s + n || !isfinite(v))
		fprintf(o->f, "null");
	else if (strspn(s, "0123456789.eE+-") >= n && s[0] != '+' && s[0] != '.' &&
		 !(s[0] == '0' && isdigit((unsigned char)s[1])) && s[n - 1] != '.')
		fprintf(o->f, "%.*s", (int)n, s);
	else
		fprintf(o->f, "%.17g", v);
}

/* One sample line: its object among its family's samples. False when the line is not one. */
static bool sample(struct out *o, const char *line)
{
	size_t n = strcspn(line, "{ ");
	char name[256];
	const char *s = line + n;

	snprintf(name, sizeof(name), "%.*s", (int)n, line);
	if (!of_family(o->name, name))
		next_family(o, name);
	open_family(o);
	fprintf(o->f, "%s{\"name\":", o->any_sample ? "," : "");
	o->any_sample = true;
	cli_print_json_str(o->f, name);
	fprintf(o->f, ",\"labels\":");
	if (*s == '{') {
		if (!(s = labels(o, s + 1)))
			return false;
	} else {
		fprintf(o->f, "{}");
	}
	if (*s != ' ')
		return false;
	fprintf(o->f, ",\"value\":");
	value(o, s);
	fprintf(o->f, "}");
	return true;
}

/* "# HELP name text" and "# TYPE name type": the next family's. */
static void comment(struct out *o, const char *line)
{
	char name[256];
	int at = 0;

	if (sscanf(line, "# %*s %255s %n", name, &at) < 1 || !at)
		return;
	if (strcmp(name, o->name) != 0)
		next_family(o, name);
	if (strncmp(line, "# HELP ", 7) == 0) {
		size_t len = strlen(line + at) + 1;

		free(o->help);
		if ((o->help = malloc(len)))
			unescape(line + at, len - 1, o->help, len);
	} else if (strncmp(line, "# TYPE ", 7) == 0) {
		snprintf(o->type, sizeof(o->type), "%.*s", (int)strcspn(line + at, " "), line + at);
	}
}

/* The text as one JSON object, printed; 0, or 1 (nothing printed) when a line of it is not the
 * text format's. */
static int write_json(char *text)
{
	struct out o = { .name = "" };
	char *json = NULL;
	size_t len = 0;
	bool good = true;

	if (!(o.f = open_memstream(&json, &len)))
		return 1;
	fprintf(o.f, "{\"metrics\":[");
	for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
		if (line[0] == '#')
			comment(&o, line);
		else if (isalpha((unsigned char)line[0]) || line[0] == '_')
			good &= sample(&o, line);
	}
	next_family(&o, "");
	fprintf(o.f, "]}\n");
	fclose(o.f);
	if (good)
		fputs(json, stdout);
	free(json);
	return good ? 0 : 1;
}

/* metrics's text into text (allocated), as metrics_main prints it on stdout; its exit status. */
static int metrics_text(int argc, char **argv, char **text)
{
	FILE *real = stdout, *mem;
	size_t len = 0;
	int rc;

	if (!(mem = open_memstream(text, &len)))
		return 1;
	stdout = mem;
	rc = metrics_main(argc, argv);
	fclose(mem);
	stdout = real;
	return rc;
}

int promjson_main(int argc, char **argv)
{
	char *text = NULL, **rest = calloc((size_t)argc + 1, sizeof(*rest));
	bool json = false, elsewhere = false;
	int n = 0, rc;

	if (!rest)
		return 1;
	for (int i = 0; i < argc; i++) {
		bool flag = strcmp(argv[i], "--json") == 0 || strcmp(argv[i], "-j") == 0;

		json |= flag;
		/* --textfile writes the file and --listen serves the text: neither prints it */
		elsewhere |= strncmp(argv[i], "--textfile", 10) == 0 ||
			     strncmp(argv[i], "-t", 2) == 0 ||
			     strncmp(argv[i], "--listen", 8) == 0 || strncmp(argv[i], "-l", 2) == 0;
		if (!flag)
			rest[n++] = argv[i];
	}
	if (!json) {
		free(rest);
		return metrics_main(argc, argv);
	}
	if (elsewhere)
		cli_die_usage(
			"cudanap metrics: --json prints, --textfile writes the file and --listen "
			"serves it: give one of them\n");
	rc = metrics_text(n, rest, &text);
	free(rest);
	if (rc == 0 && write_json(text)) {
		fprintf(stderr,
			"%s metrics: --json: a line of the text is not Prometheus' format\n",
			cli_prog);
		rc = 1;
	}
	free(text);
	return rc == 0 && fflush(stdout) != 0 ? 1 : rc;
}
