/*
 * A C library opened the first time a program calls one of its functions, not when the program starts.
 *
 * Linked, every library a backend needs is loaded by every run of every tool, whichever backend it
 * uses: an empty C program linked against apr-util, liboath, libqrencode, libunistring and libcrypt starts
 * about 1 ms later and 1 MiB larger than one that is not, and libpam with its libaudit and libcap-ng adds
 * 0.4 ms and 0.4 MiB more (make bench measures the tools as a whole). Through a loader, only the run that
 * uses a library pays for it.
 *
 * A loader module lists the functions it calls, typed from the library's own header:
 *
 *     #define OATH_FUNCTIONS(X) X(oath_init) X(oath_strerror)
 *     GATEKEEPER_LIBRARY(oath, "liboath.so.0", "the one-time code library", OATH_FUNCTIONS)
 *
 * which defines `oath_library.call.oath_init` (a pointer typed as oath_init is) and
 * `int gatekeeper_oath_load(const char **error)`: 0 once every function was found, else -1 with *error
 * (static text: the library, what it is for, and dlerror's reason) saying why. The library is opened once,
 * by the first caller, whatever the threads; it is never closed (its state lives as long as the process).
 */
#ifndef GATEKEEPER_LIBRARY_H
#define GATEKEEPER_LIBRARY_H

#include <dlfcn.h>
#include <pthread.h>
#include <stddef.h>

/* Opens `soname` (RTLD_NOW and `visibility`, RTLD_LOCAL or RTLD_GLOBAL) and looks up each of the `count`
 * `names` into `slots`. 0, or -1 with `failure` (of `size` bytes) saying why. */
int gatekeeper_library_open(const char *soname, const char *purpose, int visibility, const char *const *names,
                            void **slots, size_t count, char *failure, size_t size);

#define GATEKEEPER_LIBRARY_FIELD(name) __typeof__(&name) name;
#define GATEKEEPER_LIBRARY_NAME(name) #name,

/* Its symbols are the loader's alone (RTLD_LOCAL). */
#define GATEKEEPER_LIBRARY(prefix, soname, purpose, FUNCTIONS)                                                \
    GATEKEEPER_LIBRARY_OPENED(prefix, soname, purpose, FUNCTIONS, RTLD_LOCAL)

/* Its symbols are everyone's, as a linked library's are (RTLD_GLOBAL): for a library whose own plugins
 * may rely on finding its functions in the program rather than linking it (PAM modules and libpam). */
#define GATEKEEPER_LIBRARY_GLOBAL(prefix, soname, purpose, FUNCTIONS)                                         \
    GATEKEEPER_LIBRARY_OPENED(prefix, soname, purpose, FUNCTIONS, RTLD_GLOBAL)

#define GATEKEEPER_LIBRARY_OPENED(prefix, soname, purpose, FUNCTIONS, visibility)                             \
    struct prefix##_calls {                                                                                   \
        FUNCTIONS(GATEKEEPER_LIBRARY_FIELD)                                                                   \
    };                                                                                                        \
    static union {                                                                                            \
        struct prefix##_calls call;                                                                           \
        void *slot[sizeof(struct prefix##_calls) / sizeof(void *)];                                           \
    } prefix##_library;                                                                                       \
    static const char *const prefix##_names[] = {FUNCTIONS(GATEKEEPER_LIBRARY_NAME)};                          \
    _Static_assert(sizeof prefix##_names / sizeof *prefix##_names ==                                          \
                       sizeof(struct prefix##_calls) / sizeof(void *),                                        \
                   "one pointer a function");                                                                 \
    static pthread_once_t prefix##_once = PTHREAD_ONCE_INIT;                                                  \
    static int prefix##_loaded;                                                                               \
    static char prefix##_failure[512];                                                                        \
    static void prefix##_open(void) {                                                                         \
        int opened = gatekeeper_library_open(soname, purpose, visibility, prefix##_names, prefix##_library.slot, \
                                             sizeof prefix##_names / sizeof *prefix##_names, prefix##_failure, \
                                             sizeof prefix##_failure) == 0;                                   \
        __atomic_store_n(&prefix##_loaded, opened, __ATOMIC_RELEASE);                                         \
    }                                                                                                         \
    int gatekeeper_##prefix##_load(const char **error) {                                                         \
        pthread_once(&prefix##_once, prefix##_open);                                                          \
        if (__atomic_load_n(&prefix##_loaded, __ATOMIC_ACQUIRE)) return 0;                                    \
        if (error != NULL) *error = prefix##_failure;                                                         \
        return -1;                                                                                            \
    }

#endif
