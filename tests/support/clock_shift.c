/* clock_shift: an LD_PRELOAD library that shifts a process's wall clock (not its monotonic
 * clock) by an offset a test can change while the process runs: an NTP step, or an operator
 * setting the clock, on the machine of a redis-server. Redis keeps key expiry, TIME and the
 * queue's liveness deadlines on the wall clock, so a shift makes them jump as on a real machine.
 *
 * Environment: RLOCK_CLOCK_SHIFT_FILE, the path of a file whose first 8 bytes are the offset in
 * nanoseconds (a native int64_t; see support/clock_shift.hpp). The file is mapped, not re-read:
 * a write to it takes effect at the process's next clock read. Without the variable, or with a
 * file that cannot be mapped, the clock is not shifted.
 *
 * Shifted: gettimeofday, time, and clock_gettime of CLOCK_REALTIME, CLOCK_REALTIME_COARSE and
 * CLOCK_TAI. Every other clock (CLOCK_MONOTONIC and the rest) is passed through unchanged.
 *
 * Why not libfaketime (Debian's 0.9.10): Debian's redis-server is linked with jemalloc, whose
 * initialisation reads the clock; libfaketime resolves the real clock_gettime with dlsym, which
 * allocates, which re-enters jemalloc, and the server hangs at startup ("Unexpected recursive
 * calls to clock_gettime() without proper initialization"). This library reads the clocks with
 * the system call itself: it never allocates and never calls into the dynamic linker.
 *
 * Built without sanitizers (it runs inside redis-server, not inside a test binary). */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

/* The mapped offset; (void*)1 while not yet looked up, NULL when there is none. */
static _Atomic(const _Atomic int64_t*) shift_word = (const _Atomic int64_t*)1;

static const _Atomic int64_t* shift_source(void) {
  const _Atomic int64_t* p = atomic_load_explicit(&shift_word, memory_order_acquire);
  if (p != (const _Atomic int64_t*)1) return p;
  const _Atomic int64_t* found = NULL;
  const char* path = getenv("RLOCK_CLOCK_SHIFT_FILE");
  if (path != NULL) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
      void* m = mmap(NULL, sizeof(int64_t), PROT_READ, MAP_SHARED, fd, 0);
      close(fd);
      if (m != MAP_FAILED) found = (const _Atomic int64_t*)m;
    }
  }
  /* Two threads racing here map the file twice; one mapping stays unused (a few bytes). */
  atomic_store_explicit(&shift_word, found, memory_order_release);
  return found;
}

static int64_t shift_ns(void) {
  const _Atomic int64_t* p = shift_source();
  return p == NULL ? 0 : atomic_load_explicit(p, memory_order_relaxed);
}

static int real_clock_gettime(clockid_t id, struct timespec* ts) {
  return (int)syscall(SYS_clock_gettime, id, ts);
}

static void add_ns(struct timespec* ts, int64_t ns) {
  const int64_t total = (int64_t)ts->tv_nsec + ns % 1000000000;
  ts->tv_sec += (time_t)(ns / 1000000000 + total / 1000000000);
  ts->tv_nsec = (long)(total % 1000000000);
  if (ts->tv_nsec < 0) {
    ts->tv_nsec += 1000000000;
    ts->tv_sec -= 1;
  }
}

int clock_gettime(clockid_t id, struct timespec* ts) {
  const int r = real_clock_gettime(id, ts);
  if (r == 0 && (id == CLOCK_REALTIME || id == CLOCK_REALTIME_COARSE || id == CLOCK_TAI)) {
    add_ns(ts, shift_ns());
  }
  return r;
}

int gettimeofday(struct timeval* tv, void* tz) {
  (void)tz;
  struct timespec ts;
  const int r = clock_gettime(CLOCK_REALTIME, &ts);
  if (r != 0) return r;
  tv->tv_sec = ts.tv_sec;
  tv->tv_usec = (suseconds_t)(ts.tv_nsec / 1000);
  return 0;
}

time_t time(time_t* out) {
  struct timespec ts;
  if (clock_gettime(CLOCK_REALTIME, &ts) != 0) return (time_t)-1;
  if (out != NULL) *out = ts.tv_sec;
  return ts.tv_sec;
}
