/*
 * runner-transfer: what runs first in a step's container on another node
 * (engine swarm). It fetches the step's workspace and io directory from the
 * runner's transfer server, runs the step, forwards SIGTERM and SIGINT to it,
 * sends both directories back, waits until the runner has them, and exits
 * with the step's code (128 + its signal when it was killed).
 *
 *   runner-transfer ADDR PORT -- COMMAND [ARG...]
 *
 * The server's protocol (src/run/transfer-server.ts): one line
 * `GET <token> <part>` answered by a tar, `PUT <token> <part>` then a tar,
 * or `ASK <token> <part>` answered `ok` once the runner has that part. The
 * token is in the swarm secret /run/secrets/runner-transfer.
 *
 * Static (musl) and alone: the step's image needs no shell, bash or tar.
 * Tar is ustar with pax `x` headers (long names, long link targets, big
 * sizes), as tar-stream writes and reads. What the runner sends is extracted
 * strictly all the same: no absolute path, no `..`, nothing written through
 * a symlink, no set-id bits. What goes back is received as hostile by the
 * runner (src/workspace/tar-transfer.ts).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* where a step has its workspace and its io directory (CONTAINER_PATHS, src/plan/render.ts) */
#define WORKSPACE "/home/agent/run-workspace"
#define IO_DIR "/home/agent/.runner"
#define TOKEN_FILE "/run/secrets/runner-transfer"
#define MAX_PATH 4096
#define MAX_PAX (1024 * 1024)
/* deeper than a path can be (MAX_PATH): the recursion keeps little on the stack */
#define MAX_DEPTH 2048
#define IO_TIMEOUT_S 600
#define BUF 65536

static const char *addr, *port;
static char token[129];
static volatile sig_atomic_t child_pid;

static void say(const char *fmt, ...) {
  va_list ap;
  char line[1024];
  va_start(ap, fmt);
  int n = vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  if (n < 0) return;
  if ((size_t)n >= sizeof line) n = sizeof line - 1;
  fprintf(stderr, "runner transfer: %.*s\n", n, line);
}

/* ---------- the connection ---------- */

#define CONNECT_TRIES 150
#define CONNECT_PAUSE_NS 200000000L

/*
 * Printed last on stdout and on stderr (END_MARKER in src/container/swarm.ts): the runner has all of the step's
 * output once both its log streams end with it, and stops following them then.
 */
static void end_marker(void) {
  static const char marker[] = "\036runner-transfer: end\036\n";
  fflush(stdout);
  fflush(stderr);
  ssize_t ignored = write(1, marker, sizeof marker - 1);
  ignored = write(2, marker, sizeof marker - 1);
  (void)ignored;
}

static int dial(void) {
  struct addrinfo hints, *res = NULL, *ai;
  memset(&hints, 0, sizeof hints);
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  int rc = getaddrinfo(addr, port, &hints, &res);
  if (rc != 0) {
    say("cannot resolve %s: %s", addr, gai_strerror(rc));
    return -1;
  }
  int fd = -1;
  /* the relay (the step's gateway) starts with the step: asked again until it listens, 30 s at most */
  for (int tries = 0; fd < 0 && tries < CONNECT_TRIES; tries++) {
    if (tries) nanosleep(&(struct timespec){0, CONNECT_PAUSE_NS}, NULL);
    for (ai = res; ai; ai = ai->ai_next) {
      fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
      if (fd < 0) continue;
      if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0) break;
      int why = errno;
      close(fd);
      fd = -1;
      errno = why;
    }
    if (fd < 0 && errno != ECONNREFUSED && errno != EHOSTUNREACH && errno != ENETUNREACH && errno != ETIMEDOUT) break;
  }
  freeaddrinfo(res);
  if (fd < 0) {
    say("cannot connect to %s:%s: %s", addr, port, strerror(errno));
    return -1;
  }
  /* a runner that stops answering ends the wait, as the server ends an idle connection */
  struct timeval tv = {IO_TIMEOUT_S, 0};
  if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) != 0 || setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

static int send_all(int fd, const void *p, size_t n) {
  const char *c = p;
  while (n) {
    ssize_t w = send(fd, c, n, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return -1;
    c += w;
    n -= (size_t)w;
  }
  return 0;
}

/* a connection with the request line sent, or -1 */
static int request(const char *verb, const char *part) {
  int fd = dial();
  if (fd < 0) return -1;
  char line[256];
  int n = snprintf(line, sizeof line, "%s %s %s\n", verb, token, part);
  if (n < 0 || (size_t)n >= sizeof line || send_all(fd, line, (size_t)n) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

/* buffered reading of the connection */
struct in {
  int fd;
  unsigned char buf[BUF];
  size_t at, len;
};

/* exactly n bytes into p (p NULL: skipped); 0, or -1 at an error or a cut-short stream */
static int read_exact(struct in *in, void *p, size_t n) {
  unsigned char *o = p;
  while (n) {
    if (in->at == in->len) {
      ssize_t r = recv(in->fd, in->buf, sizeof in->buf, 0);
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) return -1;
      in->at = 0;
      in->len = (size_t)r;
    }
    size_t k = in->len - in->at;
    if (k > n) k = n;
    if (o) {
      memcpy(o, in->buf + in->at, k);
      o += k;
    }
    in->at += k;
    n -= k;
  }
  return 0;
}

/* buffered writing of the connection */
struct out {
  int fd;
  unsigned char buf[BUF];
  size_t len;
  int failed;
};

static void put(struct out *o, const void *p, size_t n) {
  const unsigned char *c = p;
  while (n && !o->failed) {
    size_t k = sizeof o->buf - o->len;
    if (k > n) k = n;
    memcpy(o->buf + o->len, c, k);
    o->len += k;
    c += k;
    n -= k;
    if (o->len == sizeof o->buf) {
      if (send_all(o->fd, o->buf, o->len) != 0) o->failed = 1;
      o->len = 0;
    }
  }
}

static int flush_out(struct out *o) {
  if (!o->failed && o->len && send_all(o->fd, o->buf, o->len) != 0) o->failed = 1;
  o->len = 0;
  return o->failed ? -1 : 0;
}

/* ---------- tar headers ---------- */

struct entry {
  char name[MAX_PATH];
  char link[MAX_PATH];
  char type;
  unsigned mode;
  uint64_t size;
  int64_t mtime;
};

/* a header's number: octal (spaces and NULs around it), or base-256 when its first byte has the high bit */
static int parse_num(const unsigned char *f, size_t n, uint64_t *v) {
  uint64_t x = 0;
  if (f[0] & 0x80) {
    if (f[0] & 0x40) return -1; /* negative */
    x = f[0] & 0x3f;
    for (size_t i = 1; i < n; i++) {
      if (x >> 56) return -1;
      x = (x << 8) | f[i];
    }
    *v = x;
    return 0;
  }
  size_t i = 0;
  while (i < n && f[i] == ' ') i++;
  for (; i < n && f[i] >= '0' && f[i] <= '7'; i++) {
    if (x >> 60) return -1;
    x = (x << 3) | (uint64_t)(f[i] - '0');
  }
  for (; i < n; i++)
    if (f[i] != ' ' && f[i] != 0) return -1;
  *v = x;
  return 0;
}

static int checksum_ok(const unsigned char *h) {
  uint64_t want;
  if (parse_num(h + 148, 8, &want) != 0) return 0;
  unsigned long sum = 0;
  for (int i = 0; i < 512; i++) sum += (i >= 148 && i < 156) ? ' ' : h[i];
  return sum == want;
}

/* a field of at most n bytes, NUL-terminated or not, into dst (of MAX_PATH) */
static void field(char *dst, const unsigned char *f, size_t n) {
  size_t k = strnlen((const char *)f, n);
  memcpy(dst, f, k);
  dst[k] = 0;
}

/* pax records (`LEN key=value\n`): path, linkpath, size and mtime are taken; the rest is ignored */
static int parse_pax(const char *p, size_t n, struct entry *e, int *has_name, int *has_link, int *has_size) {
  size_t at = 0;
  while (at < n) {
    size_t len = 0, i = at;
    while (i < n && p[i] >= '0' && p[i] <= '9' && len < MAX_PAX) len = len * 10 + (size_t)(p[i++] - '0');
    if (i >= n || p[i] != ' ' || len == 0 || len > n - at || p[at + len - 1] != '\n') return -1;
    const char *kv = p + i + 1, *end = p + at + len - 1;
    const char *eq = memchr(kv, '=', (size_t)(end - kv));
    if (!eq) return -1;
    size_t klen = (size_t)(eq - kv), vlen = (size_t)(end - eq - 1);
    const char *v = eq + 1;
    if (klen == 4 && !memcmp(kv, "path", 4)) {
      if (vlen >= MAX_PATH || memchr(v, 0, vlen)) return -1;
      memcpy(e->name, v, vlen);
      e->name[vlen] = 0;
      *has_name = 1;
    } else if (klen == 8 && !memcmp(kv, "linkpath", 8)) {
      if (vlen >= MAX_PATH || memchr(v, 0, vlen)) return -1;
      memcpy(e->link, v, vlen);
      e->link[vlen] = 0;
      *has_link = 1;
    } else if (klen == 4 && !memcmp(kv, "size", 4)) {
      uint64_t x = 0;
      if (vlen == 0 || vlen > 19) return -1;
      for (size_t j = 0; j < vlen; j++) {
        if (v[j] < '0' || v[j] > '9') return -1;
        x = x * 10 + (uint64_t)(v[j] - '0');
      }
      e->size = x;
      *has_size = 1;
    } else if (klen == 5 && !memcmp(kv, "mtime", 5)) {
      int64_t x = 0;
      for (size_t j = 0; j < vlen && v[j] >= '0' && v[j] <= '9' && x < ((int64_t)1 << 40); j++) x = x * 10 + (v[j] - '0');
      e->mtime = x;
    }
    at += len;
  }
  return 0;
}

/*
 * The next entry's header (pax and GNU long-name headers folded in).
 * 1: an entry; 0: the end of the archive; -1: a broken archive.
 */
static int next_header(struct in *in, struct entry *e) {
  unsigned char h[512];
  int has_name = 0, has_link = 0, has_size = 0;
  memset(e, 0, sizeof *e);
  for (;;) {
    if (read_exact(in, h, 512) != 0) return -1;
    int zero = 1;
    for (int i = 0; i < 512 && zero; i++) zero = h[i] == 0;
    if (zero) return 0;
    if (!checksum_ok(h)) {
      say("a broken tar header from the runner");
      return -1;
    }
    uint64_t size, mode, mtime;
    if (parse_num(h + 124, 12, &size) != 0 || parse_num(h + 100, 8, &mode) != 0 || parse_num(h + 136, 12, &mtime) != 0) return -1;
    char type = (char)h[156];
    if (type == 'x' || type == 'g' || type == 'L' || type == 'K') {
      if (size > MAX_PAX) return -1;
      char *p = malloc((size_t)size + 1);
      if (!p) return -1;
      if (read_exact(in, p, (size_t)size) != 0 || read_exact(in, NULL, (size_t)((512 - size % 512) % 512)) != 0) {
        free(p);
        return -1;
      }
      p[size] = 0;
      int rc = 0;
      if (type == 'x') {
        rc = parse_pax(p, (size_t)size, e, &has_name, &has_link, &has_size);
      } else if (type == 'L' || type == 'K') {
        size_t k = strnlen(p, (size_t)size);
        if (k >= MAX_PATH) rc = -1;
        else if (type == 'L') memcpy(e->name, p, k + 1), has_name = 1;
        else memcpy(e->link, p, k + 1), has_link = 1;
      }
      free(p);
      if (rc != 0) {
        say("a broken pax header from the runner");
        return -1;
      }
      continue;
    }
    if (!has_name) {
      char name[101], prefix[156];
      field(name, h, 100);
      /* ustar: a prefix before the name */
      if (!memcmp(h + 257, "ustar", 5) && h[345]) {
        field(prefix, h + 345, 155);
        snprintf(e->name, MAX_PATH, "%s/%s", prefix, name);
      } else {
        memcpy(e->name, name, strlen(name) + 1);
      }
    }
    if (!has_link) field(e->link, h + 157, 100);
    if (!has_size) e->size = size;
    if (!e->mtime) e->mtime = (int64_t)mtime;
    e->mode = (unsigned)(mode & 0777);
    e->type = type ? type : '0';
    return 1;
  }
}

/* ---------- extraction ---------- */

/* the entry's path made plain (no leading ./, no trailing /, no empty parts), or why not */
static const char *clean_path(char *name) {
  if (name[0] == '/') return "an absolute path";
  /* name is kept whole for the message when it is refused */
  static char work[MAX_PATH], out[MAX_PATH];
  memcpy(work, name, strlen(name) + 1);
  size_t o = 0;
  char *save = NULL;
  for (char *part = strtok_r(work, "/", &save); part; part = strtok_r(NULL, "/", &save)) {
    if (!strcmp(part, ".")) continue;
    if (!strcmp(part, "..")) return "a path with ..";
    size_t k = strlen(part);
    if (o + k + 2 > sizeof out) return "a path too long";
    if (o) out[o++] = '/';
    memcpy(out + o, part, k);
    o += k;
  }
  out[o] = 0;
  memcpy(name, out, o + 1);
  return NULL;
}

/*
 * The directory that holds `rel` under `root`, opened without following any
 * symlink, made when missing (mode 0700 until its own entry says otherwise);
 * *base points at the last part. -1 when a part is not a directory.
 */
static int open_parent(int root, char *rel, char **base) {
  int fd = dup(root);
  if (fd < 0) return -1;
  char *p = rel;
  for (char *slash; (slash = strchr(p, '/')); p = slash + 1) {
    *slash = 0;
    if (mkdirat(fd, p, 0700) != 0 && errno != EEXIST) {
      *slash = '/';
      close(fd);
      return -1;
    }
    int next = openat(fd, p, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    *slash = '/';
    close(fd);
    if (next < 0) return -1;
    fd = next;
  }
  *base = p;
  return fd;
}

struct dirfix {
  char *path;
  unsigned mode;
  int64_t mtime;
};

/* a directory's mode and time, set once everything in it was written */
static int fix_dir(int root, char *rel, unsigned mode, int64_t mtime) {
  int fd;
  if (!rel[0]) {
    fd = dup(root);
  } else {
    char *base;
    int parent = open_parent(root, rel, &base);
    if (parent < 0) return -1;
    fd = openat(parent, base, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    close(parent);
  }
  if (fd < 0) return -1;
  struct timespec ts[2] = {{(time_t)mtime, 0}, {(time_t)mtime, 0}};
  int rc = (fchmod(fd, mode) == 0 && futimens(fd, ts) == 0) ? 0 : -1;
  close(fd);
  return rc;
}

/* copies the entry's data from the stream into fd (-1: read and drop it); -1 when the stream failed */
static int copy_data(struct in *in, int fd, uint64_t size, int *write_failed) {
  unsigned char buf[BUF];
  uint64_t left = size;
  while (left) {
    size_t k = left > sizeof buf ? sizeof buf : (size_t)left;
    if (read_exact(in, buf, k) != 0) return -1;
    for (size_t w = 0; fd >= 0 && w < k && !*write_failed;) {
      ssize_t r = write(fd, buf + w, k - w);
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) *write_failed = 1;
      else w += (size_t)r;
    }
    left -= k;
  }
  return read_exact(in, NULL, (size_t)((512 - size % 512) % 512));
}

/* the tar on the connection, into `dir` (made). 0, or -1 with why said. */
static int extract(int sock, const char *dir) {
  static struct in in;
  static struct entry e;
  struct dirfix *fixes = NULL;
  size_t nfix = 0, capfix = 0;
  int rc = -1;
  in.fd = sock;
  in.at = in.len = 0;
  char path[MAX_PATH];
  snprintf(path, sizeof path, "%s", dir);
  /* mkdir -p: the directory is usually a tmpfs's, there already */
  for (char *s = path + 1; (s = strchr(s, '/')); s++) {
    *s = 0;
    if (mkdir(path, 0777) != 0 && errno != EEXIST) break;
    *s = '/';
  }
  if (mkdir(dir, 0777) != 0 && errno != EEXIST) {
    say("cannot make %s: %s", dir, strerror(errno));
    return -1;
  }
  int root = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (root < 0) {
    say("cannot open %s: %s", dir, strerror(errno));
    return -1;
  }
  for (;;) {
    int got = next_header(&in, &e);
    if (got == 0) break;
    if (got < 0) goto done;
    const char *why = clean_path(e.name);
    int wfail = 0;
    if (why) {
      say("skipped %.200s: %s", e.name, why);
      if (copy_data(&in, -1, e.size, &wfail) != 0) goto done;
      continue;
    }
    if (e.type == '5') {
      if (nfix == capfix) {
        size_t cap = capfix ? capfix * 2 : 64;
        struct dirfix *grown = realloc(fixes, cap * sizeof *fixes);
        if (!grown) goto done;
        fixes = grown;
        capfix = cap;
      }
      fixes[nfix].path = strdup(e.name);
      if (!fixes[nfix].path) goto done;
      fixes[nfix].mode = e.mode;
      fixes[nfix].mtime = e.mtime;
      nfix++;
      if (e.name[0]) {
        char *base;
        int parent = open_parent(root, e.name, &base);
        if (parent < 0 || (mkdirat(parent, base, 0700) != 0 && errno != EEXIST)) {
          say("cannot make directory %.200s: %s", e.name, strerror(errno));
          if (parent >= 0) close(parent);
          goto done;
        }
        close(parent);
      }
      if (copy_data(&in, -1, e.size, &wfail) != 0) goto done;
      continue;
    }
    if (!e.name[0] || (e.type != '0' && e.type != '7' && e.type != '2')) {
      say("skipped %.200s: an entry of type %c (only files, directories and symlinks are taken)", e.name[0] ? e.name : ".", e.type);
      if (copy_data(&in, -1, e.size, &wfail) != 0) goto done;
      continue;
    }
    char *base;
    int parent = open_parent(root, e.name, &base);
    if (parent < 0) {
      say("cannot make the directory of %.200s: %s", e.name, strerror(errno));
      goto done;
    }
    /* an entry named twice: the last one wins */
    if (unlinkat(parent, base, 0) != 0 && errno != ENOENT) {
      say("cannot replace %.200s: %s", e.name, strerror(errno));
      close(parent);
      goto done;
    }
    struct timespec ts[2] = {{(time_t)e.mtime, 0}, {(time_t)e.mtime, 0}};
    if (e.type == '2') {
      if (symlinkat(e.link, parent, base) != 0) {
        say("cannot make symlink %.200s: %s", e.name, strerror(errno));
        close(parent);
        goto done;
      }
      utimensat(parent, base, ts, AT_SYMLINK_NOFOLLOW); /* a symlink's time: nice to have */
      close(parent);
      if (copy_data(&in, -1, e.size, &wfail) != 0) goto done;
      continue;
    }
    int fd = openat(parent, base, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    close(parent);
    if (fd < 0) {
      say("cannot write %.200s: %s", e.name, strerror(errno));
      goto done;
    }
    if (copy_data(&in, fd, e.size, &wfail) != 0) {
      close(fd);
      goto done;
    }
    if (wfail || fchmod(fd, e.mode) != 0 || futimens(fd, ts) != 0) {
      say("cannot write %.200s: %s", e.name, strerror(errno));
      close(fd);
      goto done;
    }
    if (close(fd) != 0) goto done;
  }
  /* the deepest first: a directory's own time is set after its children's */
  for (size_t i = nfix; i-- > 0;) {
    /* the top directory is the node's (a tmpfs's, owned by root): its mode is its own */
    if (!fixes[i].path[0]) continue;
    if (fix_dir(root, fixes[i].path, fixes[i].mode, fixes[i].mtime) != 0) {
      say("cannot set the mode of directory %.200s: %s", fixes[i].path, strerror(errno));
      goto done;
    }
  }
  rc = 0;
done:
  for (size_t i = 0; i < nfix; i++) free(fixes[i].path);
  free(fixes);
  close(root);
  return rc;
}

/* ---------- packing ---------- */

static void octal(unsigned char *f, size_t n, uint64_t v) {
  /* n-1 digits and a NUL */
  f[n - 1] = 0;
  for (size_t i = n - 1; i-- > 0;) {
    f[i] = (unsigned char)('0' + (v & 7));
    v >>= 3;
  }
}

static void header_block(struct out *o, const char *name, const char *link, char type, unsigned mode, uint64_t size, int64_t mtime, uid_t uid, gid_t gid) {
  unsigned char h[512];
  memset(h, 0, sizeof h);
  memcpy(h, name, strnlen(name, 100));
  octal(h + 100, 8, mode & 07777);
  octal(h + 108, 8, uid <= 07777777 ? uid : 0);
  octal(h + 116, 8, gid <= 07777777 ? gid : 0);
  octal(h + 124, 12, size);
  octal(h + 136, 12, mtime > 0 && mtime <= 077777777777LL ? (uint64_t)mtime : 0);
  h[156] = (unsigned char)type;
  if (link) memcpy(h + 157, link, strnlen(link, 100));
  memcpy(h + 257, "ustar", 6);
  memcpy(h + 263, "00", 2);
  memset(h + 148, ' ', 8);
  unsigned long sum = 0;
  for (int i = 0; i < 512; i++) sum += h[i];
  octal(h + 148, 7, sum);
  h[155] = ' ';
  put(o, h, 512);
}

/* one pax record, `LEN key=value\n`, whose length counts its own digits */
static int pax_record(char *dst, size_t cap, const char *key, const char *value) {
  size_t body = strlen(key) + strlen(value) + 3; /* space, =, newline */
  size_t len = body + 1;
  for (;;) {
    char digits[24];
    int d = snprintf(digits, sizeof digits, "%zu", len);
    if (body + (size_t)d == len) break;
    len = body + (size_t)d;
  }
  int n = snprintf(dst, cap, "%zu %s=%s\n", len, key, value);
  return n < 0 || (size_t)n >= cap ? -1 : n;
}

static void pad(struct out *o, uint64_t size) {
  static const unsigned char zeros[512];
  put(o, zeros, (size_t)((512 - size % 512) % 512));
}

/* an entry's header: a pax header first when its name, its link target or its size does not fit ustar; -1 when none could be made */
static int entry_header(struct out *o, const char *name, const char *link, char type, const struct stat *st, uint64_t size) {
  char pax[2 * MAX_PATH + 128];
  size_t n = 0;
  int r;
  if (strlen(name) > 100) {
    if ((r = pax_record(pax + n, sizeof pax - n, "path", name)) < 0) return -1;
    n += (size_t)r;
  }
  if (link && strlen(link) > 100) {
    if ((r = pax_record(pax + n, sizeof pax - n, "linkpath", link)) < 0) return -1;
    n += (size_t)r;
  }
  if (size > 077777777777ULL) {
    char v[24];
    snprintf(v, sizeof v, "%llu", (unsigned long long)size);
    if ((r = pax_record(pax + n, sizeof pax - n, "size", v)) < 0) return -1;
    n += (size_t)r;
  }
  if (n) {
    header_block(o, "././@PaxHeader", NULL, 'x', 0644, n, st->st_mtime, 0, 0);
    put(o, pax, n);
    pad(o, n);
  }
  header_block(o, name, link, type, st->st_mode, size > 077777777777ULL ? 0 : size, st->st_mtime, st->st_uid, st->st_gid);
  return 0;
}

struct pack {
  struct out *o;
  char abs[MAX_PATH];
  size_t root_len;
  int skipped;
};

static int by_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* the names in a directory (sorted), read whole so no directory stays open while its children are packed */
static char **list_dir(const char *abs, size_t *count) {
  DIR *d = opendir(abs);
  if (!d) return NULL;
  char **names = NULL;
  size_t n = 0, cap = 0;
  struct dirent *de;
  while ((de = readdir(d))) {
    if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..")) continue;
    if (n == cap) {
      size_t c = cap ? cap * 2 : 32;
      char **grown = realloc(names, c * sizeof *names);
      if (!grown) goto nomem;
      names = grown;
      cap = c;
    }
    if (!(names[n] = strdup(de->d_name))) goto nomem;
    n++;
  }
  closedir(d);
  if (n) qsort(names, n, sizeof *names, by_name);
  *count = n;
  return names ? names : calloc(1, sizeof *names);
nomem:
  closedir(d);
  for (size_t i = 0; i < n; i++) free(names[i]);
  free(names);
  errno = ENOMEM;
  return NULL;
}

/* a regular file's header and bytes, exactly as many as the header says; its buffer is not on the stack (pack_dir recurses) */
static void send_file(struct pack *p, const char *rel) {
  static unsigned char buf[BUF];
  int fd = open(p->abs, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  struct stat now;
  if (fd < 0 || fstat(fd, &now) != 0 || !S_ISREG(now.st_mode)) {
    say("skipped %.200s: %s", rel, fd < 0 ? strerror(errno) : "it changed while being sent");
    p->skipped++;
    if (fd >= 0) close(fd);
    return;
  }
  uint64_t size = (uint64_t)now.st_size, left = size;
  if (entry_header(p->o, rel, NULL, '0', &now, size) != 0) {
    say("skipped %.200s: its name does not fit a tar header", rel);
    p->skipped++;
    close(fd);
    return;
  }
  while (left && !p->o->failed) {
    ssize_t r = read(fd, buf, left > sizeof buf ? sizeof buf : (size_t)left);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    put(p->o, buf, (size_t)r);
    left -= (uint64_t)r;
  }
  if (left) {
    /* the header promised `size` bytes: a file that shrank meanwhile is padded */
    say("%.200s shrank while being sent: padded with zeros", rel);
    memset(buf, 0, sizeof buf);
    while (left) {
      size_t k = left > sizeof buf ? sizeof buf : (size_t)left;
      put(p->o, buf, k);
      left -= k;
    }
  }
  pad(p->o, size);
  close(fd);
}

/* packs what is under p->abs (a directory); its entries are named from after the root */
static void pack_dir(struct pack *p, int depth) {
  size_t count = 0;
  char **names = list_dir(p->abs, &count);
  if (!names) {
    say("skipped %.200s: cannot read it (%s)", p->abs, strerror(errno));
    p->skipped++;
    return;
  }
  size_t len = strlen(p->abs);
  for (size_t i = 0; i < count && !p->o->failed; i++) {
    if (len + 1 + strlen(names[i]) + 2 > sizeof p->abs) {
      say("skipped %.200s/%.100s: its path is too long", p->abs, names[i]);
      p->skipped++;
      continue;
    }
    snprintf(p->abs + len, sizeof p->abs - len, "/%s", names[i]);
    const char *rel = p->abs + p->root_len + 1;
    struct stat st;
    if (lstat(p->abs, &st) != 0) {
      say("skipped %.200s: %s", rel, strerror(errno));
      p->skipped++;
    } else if (S_ISDIR(st.st_mode)) {
      static char name[MAX_PATH + 1]; /* used before the recursion only */
      snprintf(name, sizeof name, "%s/", rel);
      if (entry_header(p->o, name, NULL, '5', &st, 0) != 0) {
        say("skipped %.200s: its name does not fit a tar header", rel);
        p->skipped++;
      } else if (depth >= MAX_DEPTH) {
        say("skipped what is under %.200s: deeper than %d directories", rel, MAX_DEPTH);
        p->skipped++;
      } else {
        pack_dir(p, depth + 1);
      }
    } else if (S_ISLNK(st.st_mode)) {
      char target[MAX_PATH];
      ssize_t k = readlink(p->abs, target, sizeof target - 1);
      if (k < 0) {
        say("skipped %.200s: %s", rel, strerror(errno));
        p->skipped++;
      } else {
        target[k] = 0;
        if (entry_header(p->o, rel, target, '2', &st, 0) != 0) {
          say("skipped %.200s: its name does not fit a tar header", rel);
          p->skipped++;
        }
      }
    } else if (S_ISREG(st.st_mode)) {
      send_file(p, rel);
    } else {
      const char *what = S_ISSOCK(st.st_mode) ? "a socket" : S_ISFIFO(st.st_mode) ? "a FIFO" : "a device";
      say("skipped %.200s: %s (only files, directories and symlinks go back)", rel, what);
      p->skipped++;
    }
    p->abs[len] = 0;
    free(names[i]);
    names[i] = NULL;
  }
  for (size_t i = 0; i < count; i++) free(names[i]);
  free(names);
}

/* the answer to `ASK <token> <part>`: 0 when it is `ok` */
static int confirm(const char *part) {
  int fd = request("ASK", part);
  if (fd < 0) return -1;
  char ans[256];
  size_t n = 0;
  while (n < sizeof ans - 1) {
    ssize_t r = recv(fd, ans + n, sizeof ans - 1 - n, 0);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    n += (size_t)r;
    if (memchr(ans, '\n', n)) break;
  }
  close(fd);
  ans[n] = 0;
  ans[strcspn(ans, "\n")] = 0;
  if (strcmp(ans, "ok") != 0) {
    say("the runner did not take the work back (%s)", n ? ans : "no answer");
    return -1;
  }
  return 0;
}

/* `PUT <token> <part>`, the tar of dir, then the runner's confirmation */
static int send_back(const char *part, const char *dir) {
  static struct out o;
  static struct pack p;
  int fd = request("PUT", part);
  if (fd < 0) return -1;
  o.fd = fd;
  o.len = 0;
  o.failed = 0;
  p.o = &o;
  p.skipped = 0;
  snprintf(p.abs, sizeof p.abs, "%s", dir);
  p.root_len = strlen(p.abs);
  pack_dir(&p, 0);
  static const unsigned char end[1024];
  put(&o, end, sizeof end);
  int rc = flush_out(&o);
  /* the runner closes its side once it has the whole tar */
  if (rc == 0 && shutdown(fd, SHUT_WR) != 0) rc = -1;
  if (rc == 0) {
    char b[256];
    ssize_t r;
    while ((r = recv(fd, b, sizeof b, 0)) > 0 || (r < 0 && errno == EINTR)) {}
  }
  close(fd);
  if (rc != 0) return -1;
  return confirm(part);
}

/* ---------- the step ---------- */

static void forward(int sig) {
  pid_t c = child_pid;
  if (c > 0) kill(c, sig);
}

/* whether the command can be run: a name is looked up in PATH; a relative path is the workspace's, not known yet */
static int findable(const char *cmd) {
  if (strchr(cmd, '/')) return cmd[0] != '/' || access(cmd, X_OK) == 0;
  const char *path = getenv("PATH");
  if (!path || !*path) path = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
  char full[MAX_PATH];
  for (const char *p = path;; p++) {
    const char *colon = strchr(p, ':');
    size_t k = colon ? (size_t)(colon - p) : strlen(p);
    int n = snprintf(full, sizeof full, "%.*s%s%s", (int)k, p, k ? "/" : "", cmd);
    if (n > 0 && (size_t)n < sizeof full && access(full, X_OK) == 0) return 1;
    if (!colon) return 0;
    p = colon;
  }
}

static int read_token(void) {
  int fd = open(TOKEN_FILE, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  ssize_t n;
  while ((n = read(fd, token, sizeof token - 1)) < 0 && errno == EINTR) {}
  close(fd);
  if (n <= 0) return -1;
  token[n] = 0;
  token[strcspn(token, " \t\r\n")] = 0;
  for (char *c = token; *c; c++)
    if (!((*c >= '0' && *c <= '9') || (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z'))) return -1;
  return token[0] ? 0 : -1;
}

int main(int argc, char **argv) {
  if (argc < 5 || strcmp(argv[3], "--") != 0) {
    fprintf(stderr, "usage: runner-transfer ADDR PORT -- COMMAND [ARG...]\n");
    return 125;
  }
  addr = argv[1];
  port = argv[2];
  /* whichever way this ends (the step's child leaves by _exit, without it) */
  atexit(end_marker);
  char **cmd = argv + 4;
  /* an image that cannot run the step is refused before anything travels */
  if (!findable(cmd[0])) {
    if (!strcmp(cmd[0], "sh") || !strcmp(cmd[0], "/bin/sh"))
      say("this image has no /bin/sh (nor sh on its PATH), which a step's run: needs: use an image with a POSIX shell, or give the step a command: instead");
    else
      say("this image has no %.200s to run (not found on its PATH): the step was not started", cmd[0]);
    return 127;
  }
  if (read_token() != 0) {
    say("no token in %s", TOKEN_FILE);
    return 125;
  }
  /* what the runner sent is taken as it is: modes exact, not masked */
  mode_t mask = umask(0);
  int fd = request("GET", "w");
  if (fd < 0 || extract(fd, WORKSPACE) != 0) {
    say("could not fetch the workspace from %s:%s", addr, port);
    return 125;
  }
  close(fd);
  fd = request("GET", "io");
  if (fd < 0 || extract(fd, IO_DIR) != 0) {
    say("could not fetch the step's io directory");
    return 125;
  }
  close(fd);
  umask(mask);

  sigset_t block, old;
  sigemptyset(&block);
  sigaddset(&block, SIGTERM);
  sigaddset(&block, SIGINT);
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = forward;
  sigemptyset(&sa.sa_mask);
  /* a signal before the child exists is held, then forwarded to it */
  if (sigprocmask(SIG_BLOCK, &block, &old) != 0 || sigaction(SIGTERM, &sa, NULL) != 0 || sigaction(SIGINT, &sa, NULL) != 0) {
    say("cannot set up signals: %s", strerror(errno));
    return 125;
  }
  pid_t pid = fork();
  if (pid < 0) {
    say("cannot start the step: %s", strerror(errno));
    return 125;
  }
  if (pid == 0) {
    signal(SIGTERM, SIG_DFL);
    signal(SIGINT, SIG_DFL);
    sigprocmask(SIG_SETMASK, &old, NULL);
    if (chdir(WORKSPACE) != 0) {
      say("cannot enter %s: %s", WORKSPACE, strerror(errno));
      _exit(125);
    }
    execvp(cmd[0], cmd);
    say("cannot run %.200s: %s", cmd[0], strerror(errno));
    _exit(errno == ENOENT ? 127 : 126);
  }
  child_pid = pid;
  sigprocmask(SIG_SETMASK, &old, NULL);
  int status = 0;
  for (;;) {
    pid_t r = waitpid(pid, &status, 0);
    if (r == pid) break;
    if (r < 0 && errno != EINTR) {
      say("lost the step: %s", strerror(errno));
      status = 125 << 8;
      break;
    }
  }
  child_pid = 0;
  int code = WIFEXITED(status) ? WEXITSTATUS(status) : WIFSIGNALED(status) ? 128 + WTERMSIG(status) : 125;
  /* a second SIGTERM while sending is the engine's hurry: the send goes on until it is killed */
  if (send_back("w", WORKSPACE) != 0) say("could not send the work back");
  send_back("io", IO_DIR);
  return code;
}
