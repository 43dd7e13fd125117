/* A Postgres login through netns/pg.c against the real thing (suite root): Debian's postgres
 * server (initdb in a folder of the test's own, run as nobody, listening on 127.0.0.1 of a
 * network namespace the test made, TLS with a certificate made here) and Debian's psql, with a
 * small relay here that runs the proxy's state machine between them as the egress proxy would
 * (TLS to the server with OpenSSL, verified against the test's certificate). psql logs in with
 * the surrogate by SCRAM-SHA-256, MD5 and cleartext; the proxy logs in upstream with the real
 * password by SCRAM-SHA-256 and MD5, over TLS and plain, and by cleartext over TLS only; the
 * refusals are checked the way psql reports them. No traffic leaves the namespace. */

#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <grp.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <pwd.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/ssl.h>

#include "broker/client.h"
#include "netns/pg-internal.h"

#define SKIP 77
#define SERVER_PORT 5432
#define RELAY_PORT 6432
#define SURROGATE "airlock_sur_Pq3vXk8mZr2b"

#define CHECK(cond)                                                                                \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "%s:%d: check failed: %s (%s)\n", __FILE__, __LINE__,      \
				#cond, strerror(errno));                                           \
			exit(1);                                                                   \
		}                                                                                  \
	} while (0)

static char dir[64];	 /* the test's folder */
static char bindir[256]; /* Postgres's programs */
static bool started;	 /* the server runs */
static uid_t nobody_uid;
static gid_t nobody_gid;

/* ---- programs ---- */

/* Runs argv (as nobody when asked), its stdout and stderr into out (size bytes, may be NULL);
 * returns its exit status. */
static int run(bool as_nobody, char *out, size_t size, const char *const *argv)
{
	int pfd[2], status;
	size_t n = 0;
	pid_t pid;

	CHECK(pipe2(pfd, O_CLOEXEC) == 0);
	pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		char *const env[] = {"PATH=/usr/bin:/bin", "LC_ALL=C", "PGSYSCONFDIR=/nonexistent",
				     "PGPASSFILE=/dev/null", NULL};

		(void)dup2(pfd[1], 1);
		(void)dup2(pfd[1], 2);
		if (as_nobody &&
		    (setgroups(0, NULL) < 0 || setresgid(nobody_gid, nobody_gid, nobody_gid) < 0 ||
		     setresuid(nobody_uid, nobody_uid, nobody_uid) < 0))
			_exit(126);
		umask(077);
		if (chdir(dir) < 0)
			_exit(126);
		execve(argv[0], (char *const *)argv, env);
		_exit(127);
	}
	close(pfd[1]);
	for (;;) {
		char sink[4096];
		ssize_t k = read(pfd[0], out && n + 1 < size ? out + n : sink,
				 out && n + 1 < size ? size - n - 1 : sizeof(sink));

		if (k <= 0)
			break;
		if (out && n + 1 < size)
			n += (size_t)k;
	}
	close(pfd[0]);
	if (out)
		out[n] = 0;
	CHECK(waitpid(pid, &status, 0) == pid);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static void must_run(bool as_nobody, const char *const *argv)
{
	char out[8192];

	if (run(as_nobody, out, sizeof(out), argv) != 0) {
		fprintf(stderr, "%s failed:\n%s\n", argv[0], out);
		exit(1);
	}
}

static const char *prog(const char *name)
{
	static char paths[8][320];
	static unsigned next;
	char *p = paths[next++ % 8];

	snprintf(p, 320, "%s/%s", bindir, name);
	return p;
}

/* ---- the server ---- */

static void server_start(bool ssl)
{
	char opts[1024], data[128], log[128];

	snprintf(data, sizeof(data), "%s/data", dir);
	snprintf(log, sizeof(log), "%s/server.log", dir);
	snprintf(opts, sizeof(opts),
		 "-c listen_addresses=127.0.0.1 -c port=%d -c unix_socket_directories=%s "
		 "-c ssl=%s -c ssl_cert_file=%s/server.crt -c ssl_key_file=%s/server.key "
		 "-c fsync=off",
		 SERVER_PORT, dir, ssl ? "on" : "off", dir, dir);
	must_run(true, (const char *const[]){prog("pg_ctl"), "-D", data, "-l", log, "-w", "-t",
					     "60", "-o", opts, "start", NULL});
	started = true;
}

static void server_stop(void)
{
	char data[128];

	snprintf(data, sizeof(data), "%s/data", dir);
	must_run(true, (const char *const[]){prog("pg_ctl"), "-D", data, "-m", "fast", "-w", "stop",
					     NULL});
	started = false;
}

static void cleanup(void)
{
	if (started) {
		char data[128];

		snprintf(data, sizeof(data), "%s/data", dir);
		(void)run(true, NULL, 0,
			  (const char *const[]){prog("pg_ctl"), "-D", data, "-m", "immediate", "-w",
						"stop", NULL});
	}
	if (dir[0])
		(void)run(false, NULL, 0, (const char *const[]){"/bin/rm", "-rf", dir, NULL});
}

static void server_setup(void)
{
	char data[128], path[192];
	FILE *f;

	snprintf(data, sizeof(data), "%s/data", dir);
	must_run(true, (const char *const[]){"/usr/bin/openssl", "req", "-x509", "-newkey", "ec",
					     "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
					     "-keyout", "server.key", "-out", "server.crt", "-subj",
					     "/CN=localhost", "-addext",
					     "subjectAltName=DNS:localhost", "-days", "2", NULL});
	must_run(true,
		 (const char *const[]){prog("initdb"), "-D", data, "-U", "postgres", "-A", "trust",
				       "--no-sync", "--no-locale", "-E", "UTF8", NULL});
	/* Each role logs in one way; the superuser only over the socket. */
	snprintf(path, sizeof(path), "%s/pg_hba.conf", data);
	f = fopen(path, "we");
	CHECK(f);
	fputs("local all postgres trust\n"
	      "host all scram_user 127.0.0.1/32 scram-sha-256\n"
	      "host all md5_user 127.0.0.1/32 md5\n"
	      "host all clear_user 127.0.0.1/32 password\n",
	      f);
	CHECK(fclose(f) == 0);
}

static void sql(const char *statements)
{
	must_run(false, (const char *const[]){prog("psql"), "-h", dir, "-p", "5432", "-U",
					      "postgres", "-d", "postgres", "-X", "-q", "-v",
					      "ON_ERROR_STOP=1", "-c", statements, NULL});
}

/* ---- the relay: the proxy's side of one connection ---- */

struct outcome {
	int r;			    /* the state machine's error, 0 when a side closed */
	char err[AL_ERROR_MSG_MAX]; /* its message */
	unsigned connects;	    /* to the upstream */
	char method[32];	    /* netns_pg_upstream_auth() */
	bool tls;		    /* netns_pg_upstream_tls() */
	unsigned passwords;	    /* calls of the password callback */
};

struct credential {
	const char *real;
	struct outcome *out;
};

static int give_password(void *userdata, struct broker_secret **ret, struct al_error *err)
{
	struct credential *c = userdata;
	struct broker_secret *s = broker_secret_new(strlen(c->real));

	(void)err;
	if (!s)
		return -ENOMEM;
	memcpy(s->data, c->real, strlen(c->real));
	c->out->passwords++;
	*ret = s;
	return 0;
}

struct side {
	int fd;
	SSL *ssl;
};

static ssize_t side_read(struct side *s, uint8_t *buf, size_t n)
{
	ssize_t k;

	if (s->ssl) {
		int m = SSL_read(s->ssl, buf, (int)n);

		return m > 0 ? m : 0; /* a close, clean or not, ends the relay */
	}
	k = read(s->fd, buf, n);
	return k > 0 ? k : 0;
}

static void side_flush(struct side *s, struct netns_buf *b)
{
	while (netns_buf_len(b) > 0 && s->fd >= 0) {
		ssize_t k = s->ssl ? SSL_write(s->ssl, netns_buf_head(b), (int)netns_buf_len(b))
				   : write(s->fd, netns_buf_head(b), netns_buf_len(b));

		if (k <= 0)
			return;
		netns_buf_consume(b, (size_t)k);
	}
}

static int connect_server(void)
{
	struct sockaddr_in sa = {.sin_family = AF_INET,
				 .sin_port = htons(SERVER_PORT),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	CHECK(fd >= 0);
	CHECK(connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0);
	return fd;
}

static bool tls_connect(SSL_CTX *ctx, struct side *up)
{
	static const uint8_t alpn[] = "\x0apostgresql";

	up->ssl = SSL_new(ctx);
	CHECK(up->ssl);
	CHECK(SSL_set_fd(up->ssl, up->fd) == 1);
	CHECK(SSL_set1_host(up->ssl, "localhost") == 1);
	CHECK(SSL_set_alpn_protos(up->ssl, alpn, sizeof(alpn) - 1) == 0);
	return SSL_connect(up->ssl) == 1;
}

/* Takes one connection from listener and runs the proxy for it until a side closes or the
 * state machine fails. */
static void relay_one(int listener, SSL_CTX *ctx, const char *user, enum netns_pg_auth auth,
		      const char *real, struct outcome *out)
{
	struct credential cred = {.real = real, .out = out};
	struct netns_pg_options o = {
	    .user = user,
	    .database = "postgres",
	    .surrogate = SURROGATE,
	    .client_auth = auth,
	    .password = give_password,
	    .userdata = &cred,
	};
	struct netns_buf to_sandbox = {0}, to_upstream = {0};
	struct side sb = {.fd = -1}, up = {.fd = -1};
	struct netns_pg *pg = NULL;
	bool relay = false;
	uint8_t buf[16384];

	*out = (struct outcome){0};
	CHECK(netns_pg_new(&o, &pg) == 0);
	sb.fd = accept4(listener, NULL, NULL, SOCK_CLOEXEC);
	CHECK(sb.fd >= 0);
	for (;;) {
		struct pollfd pfd[2] = {{.fd = sb.fd, .events = POLLIN},
					{.fd = up.fd, .events = POLLIN}};
		struct al_error err = {0};
		ssize_t n;
		int r;

		if (!(up.ssl && SSL_pending(up.ssl) > 0))
			CHECK(poll(pfd, up.fd >= 0 ? 2 : 1, -1) > 0);
		else
			pfd[1].revents = POLLIN;
		if (pfd[0].revents) {
			n = side_read(&sb, buf, sizeof(buf));
			if (n == 0)
				break;
			r = netns_pg_from_sandbox(pg, buf, (size_t)n, &to_sandbox, &to_upstream,
						  &err);
		} else {
			n = side_read(&up, buf, sizeof(buf));
			if (n == 0) {
				(void)netns_pg_report_failure(pg, "the upstream closed",
							      &to_sandbox);
				side_flush(&sb, &to_sandbox);
				break;
			}
			r = relay ? netns_pg_relay_from_upstream(pg, buf, (size_t)n, &to_sandbox,
								 &err)
				  : netns_pg_from_upstream(pg, buf, (size_t)n, &to_sandbox,
							   &to_upstream, &err);
		}
		if (r == NETNS_PG_CONNECT || r == NETNS_PG_PASS) {
			up.fd = connect_server();
			out->connects++;
		}
		if (r == NETNS_PG_START_TLS) {
			bool ok = tls_connect(ctx, &up);

			r = netns_pg_tls_ready(pg, ok, &to_upstream, &err);
			if (!ok)
				(void)netns_pg_report_failure(pg, "TLS to the upstream failed",
							      &to_sandbox);
		}
		relay = relay || r == NETNS_PG_RELAY;
		side_flush(&up, &to_upstream);
		side_flush(&sb, &to_sandbox);
		if (r < 0) {
			out->r = r;
			snprintf(out->err, sizeof(out->err), "%s", err.msg);
			break;
		}
	}
	snprintf(out->method, sizeof(out->method), "%s",
		 netns_pg_upstream_auth(pg) ? netns_pg_upstream_auth(pg) : "");
	out->tls = netns_pg_upstream_tls(pg);
	if (up.ssl) {
		(void)SSL_shutdown(up.ssl);
		SSL_free(up.ssl);
	}
	if (up.fd >= 0)
		close(up.fd);
	close(sb.fd);
	netns_pg_free(pg);
	netns_buf_done(&to_sandbox);
	netns_buf_done(&to_upstream);
}

/* ---- one login ---- */

struct login {
	const char *user;     /* the credential's, and what psql asks for unless ask_user */
	const char *ask_user; /* psql's user, when it differs */
	enum netns_pg_auth auth;
	const char *real;     /* the broker's password */
	const char *password; /* psql's: the surrogate unless set */
	const char *sslmode;  /* psql's */
	const char *query;
};

struct result {
	struct outcome relay;
	int status; /* psql's */
	char output[8192];
};

static void login(int listener, SSL_CTX *ctx, const struct login *l, struct result *res)
{
	char conninfo[512];
	const char *argv[] = {prog("psql"), conninfo, "-X", "-A", "-t", "-c", l->query, NULL};
	int pfd[2], status;
	size_t n = 0;
	pid_t pid;

	snprintf(conninfo, sizeof(conninfo),
		 "host=127.0.0.1 port=%d user=%s dbname=postgres password=%s sslmode=%s "
		 "gssencmode=disable",
		 RELAY_PORT, l->ask_user ? l->ask_user : l->user,
		 l->password ? l->password : SURROGATE, l->sslmode);
	CHECK(pipe2(pfd, O_CLOEXEC) == 0);
	pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		char *const env[] = {"PATH=/usr/bin:/bin",	  "LC_ALL=C",
				     "PGSYSCONFDIR=/nonexistent", "PGPASSFILE=/dev/null",
				     "HOME=/nonexistent",	  NULL};

		(void)dup2(pfd[1], 1);
		(void)dup2(pfd[1], 2);
		execve(argv[0], (char *const *)argv, env);
		_exit(127);
	}
	close(pfd[1]);
	relay_one(listener, ctx, l->user, l->auth, l->real, &res->relay);
	for (;;) {
		ssize_t k = read(pfd[0], res->output + n, sizeof(res->output) - 1 - n);

		if (k <= 0)
			break;
		n += (size_t)k;
	}
	while (n > 0 && res->output[n - 1] == '\n')
		n--;
	res->output[n] = 0;
	close(pfd[0]);
	CHECK(waitpid(pid, &status, 0) == pid);
	res->status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static unsigned failures;

_printf_(2, 3) static void expect(bool ok, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	printf("%s - ", ok ? "ok" : "FAILED");
	vprintf(fmt, ap);
	printf("\n");
	va_end(ap);
	fflush(stdout);
	failures += !ok;
}

static const char *auth_name(enum netns_pg_auth a)
{
	return a == NETNS_PG_AUTH_SCRAM ? "SCRAM-SHA-256"
	       : a == NETNS_PG_AUTH_MD5 ? "MD5"
					: "cleartext";
}

#define WHO                                                                                        \
	"SELECT current_user || ',' || (SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid())"

/* psql logs in by each method with the surrogate; the proxy logs in with the real password. */
static void logins_work(int listener, SSL_CTX *ctx, bool tls)
{
	static const struct {
		const char *user, *real, *method;
	} roles[] = {
	    {"scram_user", "real-scram-Pw1", "scram-sha-256"},
	    {"md5_user", "real-md5-Pw2", "md5"},
	    {"clear_user", "real-clear-Pw3", "password"},
	};

	for (size_t i = 0; i < 3; i++)
		for (int a = NETNS_PG_AUTH_SCRAM; a <= NETNS_PG_AUTH_PASSWORD; a++) {
			struct login l = {.user = roles[i].user,
					  .auth = (enum netns_pg_auth)a,
					  .real = roles[i].real,
					  .sslmode =
					      a == NETNS_PG_AUTH_SCRAM ? "prefer" : "disable",
					  .query = WHO};
			struct result res;
			char want[64];

			login(listener, ctx, &l, &res);
			if (!tls && i == 2) {
				/* Cleartext upstream without TLS: refused, nothing sent. */
				expect(res.relay.r == -EPROTONOSUPPORT && res.status != 0 &&
					   strstr(res.output, "in clear without TLS") &&
					   !strstr(res.output, roles[i].real),
				       "%s from psql, cleartext upstream without TLS refused "
				       "(relay %d, psql %d: %s)",
				       auth_name(l.auth), res.relay.r, res.status, res.output);
				continue;
			}
			snprintf(want, sizeof(want), "%s,%s", roles[i].user,
				 tls ? "true" : "false");
			expect(
			    res.status == 0 && strcmp(res.output, want) == 0 && res.relay.r == 0 &&
				strcmp(res.relay.method, roles[i].method) == 0 &&
				res.relay.tls == tls && res.relay.passwords == 1,
			    "%s from psql (sslmode=%s), %s upstream%s (relay %d %s, psql %d: %s)",
			    auth_name(l.auth), l.sslmode, roles[i].method,
			    tls ? " over TLS" : " plain", res.relay.r, res.relay.err, res.status,
			    res.output);
		}
}

/* What psql is refused, and how it says so. */
static void refusals(int listener, SSL_CTX *ctx)
{
	struct result res;
	struct login l = {.user = "scram_user",
			  .auth = NETNS_PG_AUTH_SCRAM,
			  .real = "real-scram-Pw1",
			  .sslmode = "disable",
			  .query = WHO};

	/* A wrong surrogate: psql sees Postgres's own refusal; the upstream is not reached. */
	for (int a = NETNS_PG_AUTH_SCRAM; a <= NETNS_PG_AUTH_PASSWORD; a++) {
		l.auth = (enum netns_pg_auth)a;
		l.password = "airlock_sur_wrong";
		login(listener, ctx, &l, &res);
		expect(res.relay.r == -EPERM && res.relay.connects == 0 && res.status == 2 &&
			   strstr(res.output,
				  "password authentication failed for user \"scram_user\""),
		       "a wrong surrogate by %s refused before the upstream (relay %d, psql %d: "
		       "%s)",
		       auth_name(l.auth), res.relay.r, res.status, res.output);
	}
	l.auth = NETNS_PG_AUTH_SCRAM;
	l.password = NULL;

	/* Another user than the credential's. */
	l.ask_user = "postgres";
	login(listener, ctx, &l, &res);
	expect(res.relay.r == -EPERM && res.relay.connects == 0 && res.status == 2 &&
		   strstr(res.output, "no credential for user \"postgres\""),
	       "another user refused (relay %d, psql %d: %s)", res.relay.r, res.status, res.output);
	l.ask_user = NULL;

	/* The broker's password is not the server's: the server's refusal reaches psql. */
	l.real = "not-the-password";
	login(listener, ctx, &l, &res);
	expect(res.relay.r == -EACCES && res.status == 2 &&
		   strstr(res.output, "password authentication failed for user \"scram_user\""),
	       "a wrong real password: the server's refusal passed on (relay %d, psql %d: %s)",
	       res.relay.r, res.status, res.output);
	l.real = "real-scram-Pw1";

	/* A query whose answer holds the real password: the relay ends before it is out. */
	l.query = "SELECT 'the password is ' || 'real-scram' || '-Pw1'";
	login(listener, ctx, &l, &res);
	expect(res.relay.r == -EPERM && res.status != 0 && !strstr(res.output, "real-scram-Pw1"),
	       "an answer holding the real password cut off (relay %d: %s, psql %d: %s)",
	       res.relay.r, res.relay.err, res.status, res.output);
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void loopback_up(void)
{
	struct ifreq ifr = {.ifr_name = "lo"};
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	CHECK(fd >= 0);
	CHECK(ioctl(fd, SIOCGIFFLAGS, &ifr) == 0);
	ifr.ifr_flags |= IFF_UP;
	CHECK(ioctl(fd, SIOCSIFFLAGS, &ifr) == 0);
	close(fd);
}

static int relay_listener(void)
{
	struct sockaddr_in sa = {.sin_family = AF_INET,
				 .sin_port = htons(RELAY_PORT),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;

	CHECK(fd >= 0);
	CHECK(setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) == 0);
	CHECK(bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0);
	CHECK(listen(fd, 8) == 0);
	return fd;
}

int main(void)
{
	struct passwd *pw;
	SSL_CTX *ctx;
	glob_t g;
	char crt[128];
	double t0 = now(), t1, t2, t3;
	int listener;

	if (geteuid() != 0) {
		fprintf(stderr, "needs root (a network namespace of its own)\n");
		return getenv("AIRLOCK_TEST_MUST_RUN") ? 1 : SKIP;
	}
	/* Debian's server and client: a missing one is a failure, not a skip. */
	if (glob("/usr/lib/postgresql/*/bin/postgres", 0, NULL, &g) != 0) {
		fprintf(stderr, "no /usr/lib/postgresql/*/bin/postgres: install postgresql\n");
		return 1;
	}
	snprintf(bindir, sizeof(bindir), "%.*s", (int)(strlen(g.gl_pathv[g.gl_pathc - 1]) - 9),
		 g.gl_pathv[g.gl_pathc - 1]);
	globfree(&g);
	if (access(prog("psql"), X_OK) != 0 || access(prog("initdb"), X_OK) != 0 ||
	    access("/usr/bin/openssl", X_OK) != 0) {
		fprintf(stderr,
			"no psql or initdb in %s, or no openssl: install postgresql, "
			"postgresql-client and openssl\n",
			bindir);
		return 1;
	}
	pw = getpwnam("nobody");
	CHECK(pw);
	nobody_uid = pw->pw_uid;
	nobody_gid = pw->pw_gid;
	signal(SIGPIPE, SIG_IGN);

	CHECK(unshare(CLONE_NEWNET) == 0);
	loopback_up();
	snprintf(dir, sizeof(dir), "/tmp/airlock-pg-XXXXXX");
	CHECK(mkdtemp(dir));
	atexit(cleanup);
	CHECK(chown(dir, nobody_uid, nobody_gid) == 0);
	server_setup();
	server_start(true);
	sql("SET password_encryption = 'scram-sha-256';"
	    "CREATE ROLE scram_user LOGIN PASSWORD 'real-scram-Pw1';"
	    "CREATE ROLE clear_user LOGIN PASSWORD 'real-clear-Pw3';"
	    "SET password_encryption = 'md5';"
	    "CREATE ROLE md5_user LOGIN PASSWORD 'real-md5-Pw2';");
	t1 = now();

	ctx = SSL_CTX_new(TLS_client_method());
	CHECK(ctx);
	snprintf(crt, sizeof(crt), "%s/server.crt", dir);
	CHECK(SSL_CTX_load_verify_locations(ctx, crt, NULL) == 1);
	SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
	listener = relay_listener();

	logins_work(listener, ctx, true);
	refusals(listener, ctx);
	t2 = now();
	server_stop();
	server_start(false);
	logins_work(listener, ctx, false);
	t3 = now();
	server_stop();

	printf("# setup (initdb, server, roles) %.2f s; TLS logins and refusals %.2f s; plain "
	       "logins (with a restart) %.2f s\n",
	       t1 - t0, t2 - t1, t3 - t2);
	SSL_CTX_free(ctx);
	close(listener);
	if (failures) {
		char log[128], out[16384];

		snprintf(log, sizeof(log), "%s/server.log", dir);
		(void)run(false, out, sizeof(out),
			  (const char *const[]){"/usr/bin/tail", "-n", "40", log, NULL});
		fprintf(stderr, "%u failed; the server's log ends:\n%s\n", failures, out);
		return 1;
	}
	return 0;
}
