/* check.h: small helpers shared by the C test programs (not part of the ABI). */
#ifndef VM_TEST_CHECK_H
#define VM_TEST_CHECK_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vm.h"

/* Calls an ABI function and exits with a message unless it returns VM_OK. */
#define CHECK(call)                                                                                  \
    do {                                                                                             \
        int check_status_ = (call);                                                                  \
        if (check_status_ != VM_OK) {                                                                \
            fprintf(stderr, "%s:%d: %s returned %s: %s\n", __FILE__, __LINE__, #call,                \
                    vm_status_name(check_status_), vm_last_error());                                 \
            exit(1);                                                                                 \
        }                                                                                            \
    } while (0)

/* Exits with a message unless cond holds. */
#define REQUIRE(cond)                                                                                \
    do {                                                                                             \
        if (!(cond)) {                                                                               \
            fprintf(stderr, "%s:%d: requirement failed: %s\n", __FILE__, __LINE__, #cond);           \
            exit(1);                                                                                 \
        }                                                                                            \
    } while (0)

/* Calls an ABI function that must fail with `want`, with a last error containing `needle`.
   Prints "ok <what>" (the status name only, so output is identical on every stack). */
#define EXPECT_ERROR(what, want, needle, call)                                                       \
    do {                                                                                             \
        int expect_status_ = (call);                                                                 \
        const char *expect_msg_ = vm_last_error();                                                   \
        if (expect_status_ != (want)) {                                                              \
            fprintf(stderr, "%s:%d: %s: %s returned %s, expected %s: %s\n", __FILE__, __LINE__,      \
                    what, #call, vm_status_name(expect_status_), vm_status_name(want), expect_msg_); \
            exit(1);                                                                                 \
        }                                                                                            \
        if (expect_msg_ == NULL || strstr(expect_msg_, (needle)) == NULL) {                          \
            fprintf(stderr, "%s:%d: %s: message lacks \"%s\": %s\n", __FILE__, __LINE__, what,       \
                    (needle), expect_msg_ ? expect_msg_ : "(NULL)");                                 \
            exit(1);                                                                                 \
        }                                                                                            \
        fprintf(stderr, "  %s -> %s: %s\n", what, vm_status_name(expect_status_), expect_msg_);      \
        printf("ok %s: %s\n", what, vm_status_name(expect_status_));                                 \
    } while (0)

/* The synced data of a base, as a pointer to its elements. */
static inline const void *synced_data(vm_context *ctx, vm_base base, size_t *nbytes) {
    const void *data = NULL;
    CHECK(vm_sync(ctx, base));
    CHECK(vm_data(ctx, base, &data, nbytes));
    return data;
}

#endif
