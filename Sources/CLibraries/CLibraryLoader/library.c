#include "gatekeeper_library.h"

#include <dlfcn.h>
#include <stdio.h>

int gatekeeper_library_open(const char *soname, const char *purpose, int visibility, const char *const *names,
                            void **slots, size_t count, char *failure, size_t size) {
    void *library = dlopen(soname, RTLD_NOW | visibility);
    if (library == NULL) {
        const char *why = dlerror();
        snprintf(failure, size, "%s, %s, cannot be loaded: %s", soname, purpose, why ? why : "no reason given");
        return -1;
    }
    for (size_t index = 0; index < count; index++) {
        slots[index] = dlsym(library, names[index]);
        if (slots[index] == NULL) {
            snprintf(failure, size, "%s, %s, has no %s", soname, purpose, names[index]);
            return -1;
        }
    }
    return 0;
}
