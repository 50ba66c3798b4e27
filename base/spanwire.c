/* spanwire: the secrets, proofs and ports of an NCCL job's cut across nodes (see cn_spanwire.h). */
#define _GNU_SOURCE
#include "cn_spanwire.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

static void hex(const uint8_t *b, size_t n, char *out)
{
	for (size_t i = 0; i < n; i++)
		snprintf(out + 2 * i, 3, "%02x", b[i]);
}

int cn_spanwire_send(int fd, const char *text)
{
	for (size_t n = strlen(text), w = 0; w < n;) {
		ssize_t k = send(fd, text + w, n - w, MSG_NOSIGNAL);

		if (k < 0 && errno != EINTR)
			return -errno;
		w += k > 0 ? (size_t)k : 0;
	}
	return 0;
}

long cn_spanwire_fill(int fd, struct cn_spanwire_in *in)
{
	ssize_t k;

	if (in->used == sizeof(in->buf))
		in->used = 0; /* a line longer than any of ours */
	k = recv(fd, in->buf + in->used, sizeof(in->buf) - in->used, MSG_DONTWAIT);
	if (k < 0)
		return -errno;
	in->used += (size_t)k;
	return (long)k;
}

bool cn_spanwire_take(struct cn_spanwire_in *in, char *line, size_t len)
{
	char *nl = memchr(in->buf, '\n', in->used);
	size_t n;

	if (!nl)
		return false;
	n = (size_t)(nl - in->buf);
	snprintf(line, len, "%.*s", (int)n, in->buf);
	memmove(in->buf, nl + 1, in->used - n - 1);
	in->used -= n + 1;
	return true;
}

void cn_spanwire_secret(const void *id, size_t len, uint8_t out[CN_SHA256_LEN])
{
	static const char tag[] = "cudanap nccl cut secret";

	cn_sha256_hmac(tag, sizeof(tag) - 1, id, len, out);
}

void cn_spanwire_derive(const uint8_t parent[CN_SHA256_LEN], const char *how, const void *arg,
			size_t len, uint8_t out[CN_SHA256_LEN])
{
	struct cn_sha256 s;

	cn_sha256_init(&s);
	cn_sha256_add(&s, parent, CN_SHA256_LEN);
	cn_sha256_add(&s, how, strlen(how) + 1);
	cn_sha256_add(&s, arg, len);
	cn_sha256_end(&s, out);
}

void cn_spanwire_proof(const uint8_t secret[CN_SHA256_LEN], const char *role, const char *job,
		       const char *hub_nonce, const char *rank_nonce, const char *node, int pid,
		       char out[CN_SPANWIRE_PROOF_HEX + 1])
{
	char msg[1024];
	uint8_t mac[CN_SHA256_LEN];
	int n = snprintf(msg, sizeof(msg), "cudanap cut %d|%s|%s|%s|%s|%s|%d", CN_SPANWIRE_VERSION,
			 role, job, hub_nonce, rank_nonce, node, pid);

	cn_sha256_hmac(secret, CN_SHA256_LEN, msg,
		       n < 0			 ? 0
		       : (size_t)n < sizeof(msg) ? (size_t)n
						 : sizeof(msg) - 1,
		       mac);
	hex(mac, CN_SPANWIRE_PROOF_HEX / 2, out);
}

bool cn_spanwire_same(const char *a, const char *b)
{
	unsigned diff = 0;

	if (strlen(a) != CN_SPANWIRE_PROOF_HEX || strlen(b) != CN_SPANWIRE_PROOF_HEX)
		return false;
	for (int i = 0; i < CN_SPANWIRE_PROOF_HEX; i++)
		diff |= (unsigned)(a[i] ^ b[i]);
	return diff == 0;
}

int cn_spanwire_nonce(char out[CN_SPANWIRE_NONCE_HEX + 1])
{
	uint8_t b[CN_SPANWIRE_NONCE_HEX / 2];
	ssize_t n = getrandom(b, sizeof(b), 0);

	if (n != (ssize_t)sizeof(b))
		return n < 0 ? -errno : -EIO;
	hex(b, sizeof(b), out);
	return 0;
}

unsigned cn_spanwire_port(unsigned base, const char *job, int i)
{
	uint8_t h[CN_SHA256_LEN];

	cn_sha256(job, strlen(job), h);
	return base + ((unsigned)h[0] + (unsigned)i) % CN_SPANWIRE_PORTS;
}
