/* Unit tests of what the nodes of a job share: Slurm's host lists as the cut and the command line
 * read them, SHA-256 and HMAC-SHA-256 against the published vectors (FIPS 180-4's examples, RFC
 * 4231), and the proofs and ports of the cut across nodes. */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>

#include "cn_hostlist.h"
#include "cn_sha256.h"
#include "cn_spanwire.h"
#include "tap.h"

static const char *nth(const char *list, int i)
{
	static char out[256];

	return cn_hostlist_nth(list, i, out, sizeof(out)) == 0 ? out : "(none)";
}

static const char *hexof(const uint8_t *b)
{
	static char out[2 * CN_SHA256_LEN + 1];

	for (int i = 0; i < CN_SHA256_LEN; i++)
		snprintf(out + 2 * i, 3, "%02x", b[i]);
	return out;
}

static void hostlists(void)
{
	ok(cn_hostlist_count("cn2n[1-2]") == 2, "cn2n[1-2]: 2 hosts");
	is_str(nth("cn2n[1-2]", 0), "cn2n1", "the first");
	is_str(nth("cn2n[1-2]", 1), "cn2n2", "the second");
	is_str(nth("cn2n[1-2]", 2), "(none)", "no third");
	ok(cn_hostlist_count("gpu[01-04,07],login2") == 6, "gpu[01-04,07],login2: 6 hosts");
	is_str(nth("gpu[01-04,07],login2", 0), "gpu01", "the width of the first bound kept");
	is_str(nth("gpu[01-04,07],login2", 4), "gpu07", "the range after the comma");
	is_str(nth("gpu[01-04,07],login2", 5), "login2", "a plain name after the group");
	is_str(nth("n[8-10]", 2), "n10", "a range crossing a power of ten grows");
	is_str(nth("rack[1-2]-n[1-3]-ib", 4), "rack2-n2-ib", "two groups: the last varies fastest");
	ok(cn_hostlist_count("rack[1-2]-n[1-3]-ib") == 6, "and there are 6");
	is_str(nth("solo", 0), "solo", "one host");
	ok(cn_hostlist_count("") == 0, "an empty list: no host");
	ok(cn_hostlist_count("n[1-") < 0, "an unclosed bracket does not parse");
	ok(cn_hostlist_count("n[3-1]") < 0, "nor a range that runs backwards");
	ok(cn_hostlist_count("n[1-9999999]") < 0, "nor a list of more than a million");
	ok(cn_hostlist_count("n]1") < 0, "nor a stray bracket");
	ok(cn_hostlist_count("a,,b") < 0, "nor an empty name");
	ok(cn_hostlist_has("gpu[01-04,07]", "gpu03") && !cn_hostlist_has("gpu[01-04,07]", "gpu05"),
	   "membership");
	ok(cn_hostlist_nth("abcdefgh[1-2]", 0, (char[4]){ 0 }, 4) < 0, "a name that does not fit");
}

static void digests(void)
{
	uint8_t d[CN_SHA256_LEN], key[20];
	struct cn_sha256 s;
	char million[1000];

	cn_sha256("abc", 3, d);
	is_str(hexof(d), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
	       "SHA-256(abc)");
	cn_sha256("", 0, d);
	is_str(hexof(d), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
	       "SHA-256 of nothing");
	cn_sha256("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", 56, d);
	is_str(hexof(d), "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1",
	       "SHA-256 of the two-block message");
	memset(million, 'a', sizeof(million));
	cn_sha256_init(&s);
	for (int i = 0; i < 1000; i++)
		cn_sha256_add(&s, million, sizeof(million));
	cn_sha256_end(&s, d);
	is_str(hexof(d), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0",
	       "SHA-256 of a million a's, added a thousand at a time");
	memset(key, 0x0b, sizeof(key));
	cn_sha256_hmac(key, sizeof(key), "Hi There", 8, d);
	is_str(hexof(d), "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7",
	       "HMAC-SHA-256, RFC 4231 case 1");
	cn_sha256_hmac("Jefe", 4, "what do ya want for nothing?", 28, d);
	is_str(hexof(d), "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843",
	       "RFC 4231 case 2");
	memset(million, 0xaa, 131);
	cn_sha256_hmac(million, 131, "Test Using Larger Than Block-Size Key - Hash Key First", 54,
		       d);
	is_str(hexof(d), "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54",
	       "RFC 4231 case 6: a key longer than a block");
}

static void proofs(void)
{
	uint8_t a[CN_SHA256_LEN], b[CN_SHA256_LEN], c[CN_SHA256_LEN];
	char p[CN_SPANWIRE_PROOF_HEX + 1], q[CN_SPANWIRE_PROOF_HEX + 1], n1[40], n2[40];
	int color = 7, seen[CN_SPANWIRE_PORTS] = { 0 }, apart = 1;

	cn_spanwire_secret("id of the job", 13, a);
	cn_spanwire_secret("id of the job", 13, b);
	ok(memcmp(a, b, sizeof(a)) == 0, "the same unique id makes the same secret on every rank");
	cn_spanwire_derive(a, "split", &color, sizeof(color), c);
	ok(memcmp(a, c, sizeof(a)) != 0, "a split's secret is its own");
	cn_spanwire_proof(a, "rank", "12.0", "aa", "bb", "n1", 42, p);
	cn_spanwire_proof(b, "rank", "12.0", "aa", "bb", "n1", 42, q);
	ok(strlen(p) == CN_SPANWIRE_PROOF_HEX && cn_spanwire_same(p, q),
	   "a proof is 16 bytes of hex, the same under the same secret");
	cn_spanwire_proof(a, "hub", "12.0", "aa", "bb", "n1", 42, q);
	ok(!cn_spanwire_same(p, q), "the leader's proof is not the rank's");
	cn_spanwire_proof(a, "rank", "12.0", "aa", "bc", "n1", 42, q);
	ok(!cn_spanwire_same(p, q), "another nonce, another proof");
	cn_spanwire_proof(c, "rank", "12.0", "aa", "bb", "n1", 42, q);
	ok(!cn_spanwire_same(p, q), "another secret, another proof");
	ok(!cn_spanwire_same(p, "short"), "a proof of the wrong length is not the same");
	ok(cn_spanwire_nonce(n1) == 0 && cn_spanwire_nonce(n2) == 0 && strlen(n1) == 32 &&
		   strcmp(n1, n2) != 0,
	   "nonces are fresh");
	for (int i = 0; i < CN_SPANWIRE_TRIES; i++) {
		unsigned port = cn_spanwire_port(28640, "12.0", i);

		apart &= port >= 28640 && port < 28640 + CN_SPANWIRE_PORTS && !seen[port - 28640]++;
	}
	ok(apart, "a job's ports are within the range, each tried once");
	ok(cn_spanwire_port(28640, "12.0", 3) == cn_spanwire_port(28640, "12.0", 3),
	   "and the same on every rank");
}

int main(void)
{
	hostlists();
	digests();
	proofs();
	return tap_done();
}
