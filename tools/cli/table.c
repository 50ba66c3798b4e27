/* table: rows of cells printed in columns as wide as their widest cell, heads included, so that no
 * word breaks the table (cudanap status). */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

void table_init(struct table *t, const char *const *heads, const char *align, int cols)
{
	memset(t, 0, sizeof(*t));
	t->heads = heads;
	t->align = align;
	t->cols = cols;
}

int table_add(struct table *t, const char *const *cells)
{
	char **row;

	if (t->n == t->cap) {
		int cap = t->cap ? 2 * t->cap : 16;
		char ***m = realloc(t->rows, (size_t)cap * sizeof(*m));

		if (!m)
			return -1;
		t->rows = m;
		t->cap = cap;
	}
	row = calloc((size_t)t->cols, sizeof(*row));
	if (!row)
		return -1;
	for (int c = 0; c < t->cols; c++)
		if (!(row[c] = strdup(cells[c] ? cells[c] : ""))) {
			while (c--)
				free(row[c]);
			free(row);
			return -1;
		}
	t->rows[t->n++] = row;
	return 0;
}

/* One line: each cell padded to its column's width ('r': on the left), the last one as it is. */
static void line(const struct table *t, const char *const *cells, const int *w, FILE *f)
{
	for (int c = 0; c < t->cols; c++) {
		if (c == t->cols - 1)
			fprintf(f, "%s\n", cells[c]);
		else if (t->align[c] == 'r')
			fprintf(f, "%*s ", w[c], cells[c]);
		else
			fprintf(f, "%-*s ", w[c], cells[c]);
	}
}

void table_print(const struct table *t, FILE *f)
{
	int *w = calloc((size_t)t->cols, sizeof(*w));

	if (!w)
		return;
	for (int c = 0; c < t->cols; c++) {
		w[c] = (int)strlen(t->heads[c]);
		for (int r = 0; r < t->n; r++)
			if ((int)strlen(t->rows[r][c]) > w[c])
				w[c] = (int)strlen(t->rows[r][c]);
	}
	line(t, t->heads, w, f);
	for (int r = 0; r < t->n; r++)
		line(t, (const char *const *)t->rows[r], w, f);
	free(w);
}

void table_free(struct table *t)
{
	for (int r = 0; r < t->n; r++) {
		for (int c = 0; c < t->cols; c++)
			free(t->rows[r][c]);
		free(t->rows[r]);
	}
	free(t->rows);
	t->rows = NULL;
	t->n = t->cap = 0;
}
