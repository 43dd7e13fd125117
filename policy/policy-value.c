/* The value checkers shared by the JSON parser and the command-line overrides. They are pure:
 * no file system, no network, no global state. */

#include <arpa/inet.h>
#include <limits.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "common/parse-util.h"
#include "policy/policy-internal.h"

static bool is_plain_key(const char *k)
{
	size_t n = strspn(k, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-");

	return n > 0 && k[n] == '\0' && n <= AL_QUOTE_CHARS;
}

static void where_append(const struct policy_where *w, char *buf, size_t size, size_t *len)
{
	int n;

	if (!w)
		return;
	where_append(w->up, buf, size, len);
	if (*len >= size)
		return;
	if (!w->key)
		n = snprintf(buf + *len, size - *len, "[%zu]", w->index);
	else if (is_plain_key(w->key))
		n = snprintf(buf + *len, size - *len, "%s%s", w->up ? "." : "", w->key);
	else
		n = snprintf(buf + *len, size - *len, "[%s]", QUOTE(w->key));
	if (n > 0)
		*len = MIN(*len + (size_t)n, size);
}

void policy_where_format(const struct policy_where *w, char *buf, size_t size)
{
	size_t len = 0;

	if (size == 0)
		return;
	buf[0] = '\0';
	where_append(w, buf, size, &len);
}

int policy_error(struct al_error *err, int code, const struct policy_where *w, const char *fmt, ...)
{
	char where[AL_ERROR_MSG_MAX], msg[AL_ERROR_MSG_MAX];
	va_list ap;

	if (!err)
		return code;
	va_start(ap, fmt);
	(void)vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	policy_where_format(w, where, sizeof(where));
	if (where[0] == '\0')
		return al_error_set(err, code, "%s", msg);
	return al_error_set(err, code, "%s: %s", where, msg);
}

bool policy_utf8_is_valid(const char *s, size_t len)
{
	const unsigned char *p = (const unsigned char *)s, *end = p + len;

	while (p < end) {
		unsigned char c = *p;
		uint32_t cp;
		size_t n;

		if (c < 0x80) {
			p++;
			continue;
		}
		if (c >= 0xc2 && c <= 0xdf) {
			n = 1;
			cp = c & 0x1f;
		} else if (c >= 0xe0 && c <= 0xef) {
			n = 2;
			cp = c & 0x0f;
		} else if (c >= 0xf0 && c <= 0xf4) {
			n = 3;
			cp = c & 0x07;
		} else {
			return false; /* a continuation byte, an overlong lead (c0, c1) or >
					 U+10FFFF */
		}
		if ((size_t)(end - p) <= n)
			return false;
		for (size_t i = 1; i <= n; i++) {
			if ((p[i] & 0xc0) != 0x80)
				return false;
			cp = (cp << 6) | (p[i] & 0x3f);
		}
		if ((n == 2 && cp < 0x800) || (n == 3 && (cp < 0x10000 || cp > 0x10ffff)) ||
		    (cp >= 0xd800 && cp <= 0xdfff))
			return false; /* overlong, out of range, or a UTF-16 surrogate */
		p += n + 1;
	}
	return true;
}

int policy_check_string(const struct policy_where *w, const char *s, size_t max,
			struct al_error *err)
{
	size_t len = strlen(s);

	if (len > max)
		return policy_error(err, -EINVAL, w, "%s is longer than %zu bytes", QUOTE(s), max);
	if (!policy_utf8_is_valid(s, len))
		return policy_error(err, -EINVAL, w, "%s is not valid UTF-8", QUOTE(s));
	return 0;
}

static bool has_control_char(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			return true;
	return false;
}

/* Is path p (normalised, absolute) dir itself or inside it? */
static bool path_is_in(const char *p, const char *dir)
{
	const char *rest = startswith(p, dir);

	return rest && (*rest == '\0' || *rest == '/');
}

static int check_sandbox_place(const struct policy_where *w, const char *orig, const char *norm,
			       struct al_error *err)
{
	static const char *const managed[] = {"/proc", "/dev", "/sys"};

	if (streq(norm, "/"))
		return policy_error(err, -EINVAL, w, "%s is the root of the sandbox", QUOTE(orig));
	for (size_t i = 0; i < ELEMENTSOF(managed); i++)
		if (path_is_in(norm, managed[i]))
			return policy_error(err, -EINVAL, w,
					    "%s is inside %s, which airlock manages", QUOTE(orig),
					    managed[i]);
	return 0;
}

int policy_normalize_path(const struct policy_where *w, const char *s, unsigned flags, char **ret,
			  struct al_error *err)
{
	_cleanup_free_ char *out = NULL;
	bool absolute = s[0] == '/';
	size_t o = 0;
	int r;

	if (s[0] == '\0')
		return policy_error(err, -EINVAL, w, "the path is empty");
	if (strlen(s) >= PATH_MAX)
		return policy_error(err, -EINVAL, w, "%s is longer than %d bytes", QUOTE(s),
				    PATH_MAX - 1);
	if (has_control_char(s))
		return policy_error(err, -EINVAL, w, "%s contains a control character", QUOTE(s));
	if ((flags & (POLICY_PATH_ABSOLUTE | POLICY_PATH_SANDBOX)) && !absolute)
		return policy_error(err, -EINVAL, w, "%s is not an absolute path", QUOTE(s));

	out = malloc(strlen(s) + 2);
	if (!out)
		return -ENOMEM;
	for (const char *c = s; *c;) {
		size_t l = strcspn(c, "/");

		if (l == 0 || (l == 1 && c[0] == '.')) {
			/* "//" or "/./": nothing */
		} else if (l == 2 && c[0] == '.' && c[1] == '.' &&
			   !(flags & POLICY_PATH_ALLOW_DOTDOT)) {
			return policy_error(err, -EINVAL, w, "%s has a \"..\" component", QUOTE(s));
		} else if (l > NAME_MAX) {
			return policy_error(err, -EINVAL, w,
					    "%s has a component longer than %d bytes", QUOTE(s),
					    NAME_MAX);
		} else {
			if (o > 0 || absolute)
				out[o++] = '/';
			memcpy(out + o, c, l);
			o += l;
		}
		c += l;
		if (*c == '/')
			c++;
	}
	if (o == 0)
		out[o++] = absolute ? '/' : '.';
	out[o] = '\0';

	if (flags & POLICY_PATH_SANDBOX) {
		r = check_sandbox_place(w, s, out, err);
		if (r < 0)
			return r;
	}
	if ((flags & POLICY_PATH_NOT_ROOT) && streq(out, "/"))
		return policy_error(err, -EINVAL, w, "%s is the root folder, not a file", QUOTE(s));
	*ret = TAKE_PTR(out);
	return 0;
}

bool policy_glob_is_valid(const char *s)
{
	return strlen(s) <= POLICY_STRING_MAX && policy_check_glob(NULL, s, NULL) >= 0;
}

int policy_check_glob(const struct policy_where *w, const char *s, struct al_error *err)
{
	if (s[0] == '\0')
		return policy_error(err, -EINVAL, w, "the pattern is empty");
	if (has_control_char(s))
		return policy_error(err, -EINVAL, w, "%s contains a control character", QUOTE(s));
	if (s[0] == '/')
		return policy_error(err, -EINVAL, w,
				    "%s is absolute; patterns are relative to the workspace root",
				    QUOTE(s));
	for (const char *c = s;;) {
		size_t l = strcspn(c, "/");

		if (l == 0)
			return policy_error(err, -EINVAL, w, "%s has an empty component", QUOTE(s));
		if ((l == 1 && c[0] == '.') || (l == 2 && c[0] == '.' && c[1] == '.'))
			return policy_error(err, -EINVAL, w, "%s has a \"%.*s\" component",
					    QUOTE(s), (int)l, c);
		if (l > NAME_MAX)
			return policy_error(err, -EINVAL, w,
					    "%s has a component longer than %d bytes", QUOTE(s),
					    NAME_MAX);
		if (!(l == 2 && c[0] == '*' && c[1] == '*') && memmem(c, l, "**", 2))
			return policy_error(err, -EINVAL, w,
					    "%s: \"**\" must be a whole path component", QUOTE(s));
		c += l;
		if (*c == '\0')
			return 0;
		c++;
	}
}

bool policy_env_name_is_valid(const char *s)
{
	size_t n;

	if (!((s[0] >= 'A' && s[0] <= 'Z') || (s[0] >= 'a' && s[0] <= 'z') || s[0] == '_'))
		return false;
	n = strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_");
	return s[n] == '\0' && n <= POLICY_ENV_NAME_MAX;
}

/* The variables through which the dynamic loader and libc can be made to load code or data of
 * the caller's choosing (glibc's "unsecure" set, minus TMPDIR and TZDIR, which only name folders
 * to read from). The executables allow list would mean nothing if the policy could set them. */
static bool env_name_is_loader_injection(const char *s)
{
	static const char *const names[] = {
	    "GCONV_PATH", "GETCONF_DIR", "GLIBC_TUNABLES", "HOSTALIASES", "LOCALDOMAIN",
	    "LOCPATH",	  "NIS_PATH",	 "NLSPATH",	   "RES_OPTIONS", "RESOLV_HOST_CONF",
	};

	if (startswith(s, "LD_") || startswith(s, "MALLOC_"))
		return true;
	for (size_t i = 0; i < ELEMENTSOF(names); i++)
		if (streq(s, names[i]))
			return true;
	return false;
}

int policy_check_env_name(const struct policy_where *w, const char *name, struct al_error *err)
{
	if (!policy_env_name_is_valid(name))
		return policy_error(
		    err, -EINVAL, w,
		    "%s is not a valid variable name ([A-Za-z_][A-Za-z0-9_]*, at most "
		    "%d bytes)",
		    QUOTE(name), POLICY_ENV_NAME_MAX);
	if (env_name_is_loader_injection(name))
		return policy_error(
		    err, -EINVAL, w,
		    "%s is refused: the dynamic loader or libc reads it, and it could "
		    "inject code or data into every program",
		    QUOTE(name));
	return 0;
}

int policy_env_name_check(const char *field, const char *name, struct al_error *err)
{
	const struct policy_where w = {.key = field};

	return policy_check_env_name(&w, name, err);
}

int policy_check_env_value(const struct policy_where *w, const char *value, struct al_error *err)
{
	return policy_check_string(w, value, POLICY_ENV_VALUE_MAX, err);
}

static bool is_lower_alnum(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

/* Lower-cases s into buf (POLICY_HOST_MAX + 1 bytes) when it is a valid host name. */
static bool host_lower(const char *s, char *buf)
{
	size_t len = strlen(s), label = 0;
	bool all_digits = true;

	if (len == 0 || len > POLICY_HOST_MAX)
		return false;
	for (size_t i = 0; i <= len; i++) {
		char c = s[i];

		if (c >= 'A' && c <= 'Z')
			c = (char)(c - 'A' + 'a');
		buf[i] = c;
		if (c == '.' || c == '\0') {
			if (label == 0 || label > 63 || buf[i - 1] == '-')
				return false;
			if (c == '\0')
				break;
			label = 0;
			all_digits = true;
			continue;
		}
		if (!is_lower_alnum(c) && !(c == '-' && label > 0))
			return false;
		if (c < '0' || c > '9')
			all_digits = false;
		label++;
	}
	return !all_digits;
}

int policy_normalize_host(const struct policy_where *w, const char *s, char **ret,
			  struct al_error *err)
{
	char buf[POLICY_HOST_MAX + 1];
	char *d;

	if (!host_lower(s, buf))
		return policy_error(err, -EINVAL, w, "%s is not a valid host name", QUOTE(s));
	d = strdup(buf);
	if (!d)
		return -ENOMEM;
	*ret = d;
	return 0;
}

int policy_normalize_host_pattern(const struct policy_where *w, const char *s, bool *ret_wildcard,
				  char **ret, struct al_error *err)
{
	char buf[POLICY_HOST_MAX + 1];
	const char *suffix = startswith(s, "*.");
	char *d;

	if (!host_lower(suffix ?: s, buf) || (suffix && strlen(s) > POLICY_HOST_MAX))
		return policy_error(err, -EINVAL, w,
				    "%s is not a valid host name or \"*.suffix\" pattern",
				    QUOTE(s));
	if (suffix) {
		if (asprintf(&d, "*.%s", buf) < 0)
			return -ENOMEM;
	} else {
		d = strdup(buf);
		if (!d)
			return -ENOMEM;
	}
	if (ret_wildcard)
		*ret_wildcard = suffix;
	*ret = d;
	return 0;
}

int policy_host_pattern_normalize(const char *s, char **ret)
{
	return policy_normalize_host_pattern(&POLICY_WHERE_KEY(NULL, "host"), s, NULL, ret, NULL);
}

/* Parses an IPv4 or IPv6 literal into addr (16 bytes), refusing IPv4-mapped IPv6 addresses: a
 * rule or a pin for one would never match the IPv4 traffic it stands for. */
static int ip_parse(const char *s, uint8_t *ret_family, uint8_t addr[static 16])
{
	struct in6_addr a6;

	memset(addr, 0, 16);
	if (inet_pton(AF_INET, s, addr) == 1) {
		*ret_family = AF_INET;
		return 0;
	}
	if (inet_pton(AF_INET6, s, &a6) != 1)
		return -EINVAL;
	if (IN6_IS_ADDR_V4MAPPED(&a6))
		return -EAFNOSUPPORT;
	memcpy(addr, &a6, 16);
	*ret_family = AF_INET6;
	return 0;
}

static int ip_parse_error(const struct policy_where *w, const char *s, int r, struct al_error *err)
{
	if (r == -EAFNOSUPPORT)
		return policy_error(err, -EINVAL, w,
				    "%s is an IPv4-mapped IPv6 address; write the IPv4 address",
				    QUOTE(s));
	return policy_error(err, -EINVAL, w, "%s is not an IP address", QUOTE(s));
}

int policy_normalize_ip(const struct policy_where *w, const char *s, char **ret,
			struct al_error *err)
{
	char buf[INET6_ADDRSTRLEN];
	uint8_t family, addr[16];
	char *d;
	int r;

	r = ip_parse(s, &family, addr);
	if (r < 0)
		return ip_parse_error(w, s, r, err);
	if (!inet_ntop(family, addr, buf, sizeof(buf)))
		return -errno;
	d = strdup(buf);
	if (!d)
		return -ENOMEM;
	*ret = d;
	return 0;
}

/* Strict decimal without sign or leading zero, at most max. */
static bool parse_small_uint(const char *s, unsigned max, unsigned *ret)
{
	unsigned v = 0;

	if (s[0] < '0' || s[0] > '9' || (s[0] == '0' && s[1] != '\0'))
		return false;
	for (; *s; s++) {
		if (*s < '0' || *s > '9')
			return false;
		v = v * 10 + (unsigned)(*s - '0');
		if (v > max)
			return false;
	}
	*ret = v;
	return true;
}

static int cidr_parse(const struct policy_where *w, const char *s, struct policy_net_rule *rule,
		      struct al_error *err)
{
	char addr_text[INET6_ADDRSTRLEN + 1], net_text[INET6_ADDRSTRLEN], *d;
	const char *slash = strrchr(s, '/');
	uint8_t family, addr[16];
	unsigned prefix = 0, bits;
	bool host_bits = false;
	int r;

	if (slash) {
		if ((size_t)(slash - s) >= sizeof(addr_text))
			return policy_error(err, -EINVAL, w, "%s is not a CIDR block", QUOTE(s));
		memcpy(addr_text, s, (size_t)(slash - s));
		addr_text[slash - s] = '\0';
	} else {
		if (strlen(s) >= sizeof(addr_text))
			return policy_error(err, -EINVAL, w, "%s is not an IP address", QUOTE(s));
		strcpy(addr_text, s);
	}
	r = ip_parse(addr_text, &family, addr);
	if (r < 0)
		return ip_parse_error(w, s, r, err);
	bits = family == AF_INET ? 32 : 128;
	if (slash && !parse_small_uint(slash + 1, bits, &prefix))
		return policy_error(err, -EINVAL, w, "%s has an invalid prefix length (0-%u)",
				    QUOTE(s), bits);
	if (!slash)
		prefix = bits;
	for (unsigned i = prefix; i < bits; i++)
		if (addr[i / 8] & (0x80 >> (i % 8))) {
			host_bits = true;
			addr[i / 8] &= (uint8_t) ~(0x80 >> (i % 8));
		}
	if (!inet_ntop(family, addr, net_text, sizeof(net_text)))
		return -errno;
	if (host_bits)
		return policy_error(err, -EINVAL, w,
				    "%s has host bits set (the network is \"%s/%u\")", QUOTE(s),
				    net_text, prefix);
	if (prefix == bits)
		d = strdup(net_text);
	else if (asprintf(&d, "%s/%u", net_text, prefix) < 0)
		d = NULL;
	if (!d)
		return -ENOMEM;
	rule->destination = d;
	rule->kind = POLICY_DEST_CIDR;
	rule->family = family;
	rule->prefix_len = (uint8_t)prefix;
	memcpy(rule->addr, addr, sizeof(rule->addr));
	return 0;
}

int policy_parse_destination(const struct policy_where *w, const char *s,
			     struct policy_net_rule *rule, struct al_error *err)
{
	bool wildcard;
	char *d;
	int r;

	/* Anything with a colon or a slash, or made of digits and dots only, is meant as an
	 * address: say what is wrong with it as an address rather than as a host name. */
	if (strpbrk(s, ":/") || (s[0] != '\0' && strspn(s, "0123456789.") == strlen(s)))
		return cidr_parse(w, s, rule, err);
	r = policy_normalize_host_pattern(NULL, s, &wildcard, &d, NULL);
	if (r == -ENOMEM)
		return r;
	if (r < 0)
		return policy_error(
		    err, -EINVAL, w,
		    "%s is not a host name, \"*.suffix\" pattern, IP address or CIDR "
		    "block",
		    QUOTE(s));
	rule->destination = d;
	rule->kind = wildcard ? POLICY_DEST_WILDCARD : POLICY_DEST_HOST;
	rule->family = 0;
	rule->prefix_len = 0;
	memset(rule->addr, 0, sizeof(rule->addr));
	return 0;
}

int policy_parse_port(const struct policy_where *w, const char *s, uint16_t *ret,
		      struct al_error *err)
{
	unsigned v;

	if (!parse_small_uint(s, 65535, &v) || v == 0)
		return policy_error(err, -EINVAL, w, "%s is not a port number (1-65535)", QUOTE(s));
	*ret = (uint16_t)v;
	return 0;
}

int policy_parse_size(const struct policy_where *w, const char *s, uint64_t *ret,
		      struct al_error *err)
{
	int r;

	r = al_parse_size(s, ret);
	if (r == -ERANGE)
		return policy_error(err, -EINVAL, w, "%s is too large", QUOTE(s));
	if (r < 0)
		return policy_error(err, -EINVAL, w,
				    "%s is not a size (such as \"512Mi\", \"2G\" or \"1048576\")",
				    QUOTE(s));
	return 0;
}

static int check_min_size(const struct policy_where *w, uint64_t bytes, uint64_t min,
			  struct al_error *err)
{
	char have[32], want[32];

	if (bytes >= min)
		return 0;
	(void)al_format_size(bytes, have, sizeof(have));
	(void)al_format_size(min, want, sizeof(want));
	return policy_error(err, -EINVAL, w, "%s is below the minimum of %s", have, want);
}

int policy_check_memory(const struct policy_where *w, uint64_t bytes, struct al_error *err)
{
	return check_min_size(w, bytes, POLICY_MEMORY_MIN, err);
}

int policy_check_disk(const struct policy_where *w, uint64_t bytes, struct al_error *err)
{
	return check_min_size(w, bytes, POLICY_DISK_MIN, err);
}

int policy_parse_timeout(const struct policy_where *w, const char *s, uint64_t *ret,
			 struct al_error *err)
{
	uint64_t v;
	int r;

	r = al_parse_duration(s, &v);
	if (r == -ERANGE)
		return policy_error(err, -EINVAL, w, "%s is too long", QUOTE(s));
	if (r < 0)
		return policy_error(err, -EINVAL, w,
				    "%s is not a duration (such as \"30s\", \"5m\" or \"1m30s\")",
				    QUOTE(s));
	if (v == 0)
		return policy_error(
		    err, -EINVAL, w,
		    "%s: a timeout must be longer than zero (leave it out for none)", QUOTE(s));
	if (v > POLICY_TIMEOUT_MAX_USEC)
		return policy_error(err, -EINVAL, w, "%s is more than 366 days (366d)", QUOTE(s));
	*ret = v;
	return 0;
}

int policy_parse_cpu(const struct policy_where *w, const char *s, uint64_t *ret,
		     struct al_error *err)
{
	int r;

	r = al_parse_cpu(s, ret);
	if (r == -ERANGE)
		return policy_error(err, -EINVAL, w, "%s is too large", QUOTE(s));
	if (r < 0)
		return policy_error(
		    err, -EINVAL, w,
		    "%s is not a CPU amount (such as \"1.5\" or \"500m\", more than 0)", QUOTE(s));
	return 0;
}

int policy_parse_seccomp(const struct policy_where *w, const char *s, enum policy_seccomp *ret,
			 struct al_error *err)
{
	static const enum policy_seccomp levels[] = {
	    POLICY_SECCOMP_BASELINE,
	    POLICY_SECCOMP_RESTRICTED,
	    POLICY_SECCOMP_STRICT,
	};

	for (size_t i = 0; i < ELEMENTSOF(levels); i++)
		if (streq(s, policy_seccomp_to_string(levels[i]))) {
			*ret = levels[i];
			return 0;
		}
	return policy_error(err, -EINVAL, w,
			    "%s is not a seccomp level (baseline, restricted or strict)", QUOTE(s));
}
