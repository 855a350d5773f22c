/* An LD_PRELOAD shim that makes every fsync() and fdatasync() slower by a set time: a planted
 * regression of known size for scripts/bench_ab.py (the storage as it would be with a
 * slower flush).
 *
 * SLOWSYNC_NS: extra nanoseconds after each real call (default 0). The wait is a busy loop
 * on CLOCK_MONOTONIC, so it is exact to about a microsecond: nanosleep() would add the
 * thread's timer slack (50 us by default on Linux, prctl(2) PR_SET_TIMERSLACK).
 * Build: cc -O2 -shared -fPIC -o slowsync.so slowsync.c -ldl
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static long long delay_ns = -1;

static void wait_extra(void) {
    if (delay_ns < 0) {
        const char *s = getenv("SLOWSYNC_NS");
        delay_ns = s ? atoll(s) : 0;
    }
    if (delay_ns <= 0) return;
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    do {
        clock_gettime(CLOCK_MONOTONIC, &t);
    } while ((t.tv_sec - t0.tv_sec) * 1000000000LL + (t.tv_nsec - t0.tv_nsec) < delay_ns);
}

int fsync(int fd) {
    static int (*real)(int);
    if (!real) real = (int (*)(int))dlsym(RTLD_NEXT, "fsync");
    int rc = real(fd);
    wait_extra();
    return rc;
}

int fdatasync(int fd) {
    static int (*real)(int);
    if (!real) real = (int (*)(int))dlsym(RTLD_NEXT, "fdatasync");
    int rc = real(fd);
    wait_extra();
    return rc;
}
